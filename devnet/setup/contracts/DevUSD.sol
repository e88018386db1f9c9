// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

import "DevERC20.sol";

/// A FiatToken-like stablecoin for the devnet: ERC-20, EIP-3009
/// (`transferWithAuthorization`, both signature forms, `authorizationState`)
/// and EIP-2612 `permit`, over a standard EIP-712 domain or the salted one
/// (polygon USDT0: no chainId, salt = bytes32(chainId)). With `erc5267` it
/// also describes its domain through `eip712Domain()` (EIP-5267), as
/// OpenZeppelin-based tokens such as USDT0 do; without, that call reverts,
/// as on FiatToken (USDC). Test fixture only.
contract DevUSD is DevERC20 {
    string public version;
    mapping(address => uint256) public nonces;
    mapping(address => mapping(bytes32 => bool)) public authorizationState;

    bytes32 public immutable DOMAIN_SEPARATOR;
    bool private immutable erc5267;
    bool private immutable salted;
    bytes32 private constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 private constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");
    uint256 private constant HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);

    constructor(string memory name_, string memory version_, string memory symbol_, uint8 decimals_, bool salted_, bool erc5267_)
        DevERC20(name_, symbol_, decimals_)
    {
        version = version_;
        salted = salted_;
        erc5267 = erc5267_;
        DOMAIN_SEPARATOR = salted_
            ? keccak256(
                abi.encode(
                    keccak256("EIP712Domain(string name,string version,address verifyingContract,bytes32 salt)"),
                    keccak256(bytes(name_)),
                    keccak256(bytes(version_)),
                    address(this),
                    bytes32(block.chainid)
                )
            )
            : keccak256(
                abi.encode(
                    keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                    keccak256(bytes(name_)),
                    keccak256(bytes(version_)),
                    block.chainid,
                    address(this)
                )
            );
    }

    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        uint8 v, bytes32 r, bytes32 s
    ) external {
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        bytes memory signature
    ) external {
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, signature);
    }

    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
    {
        require(block.timestamp <= deadline, "permit expired");
        bytes32 digest = _digest(keccak256(abi.encode(PERMIT_TYPEHASH, owner, spender, value, nonces[owner]++, deadline)));
        require(_recover(digest, abi.encodePacked(r, s, v)) == owner, "invalid signature");
        _approve(owner, spender, value);
    }

    function _transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        bytes memory signature
    ) private {
        require(block.timestamp > validAfter, "authorization is not yet valid");
        require(block.timestamp < validBefore, "authorization is expired");
        require(!authorizationState[from][nonce], "authorization is used");
        bytes32 digest = _digest(
            keccak256(abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce))
        );
        require(_recover(digest, signature) == from, "invalid signature");
        authorizationState[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function eip712Domain()
        external
        view
        returns (bytes1, string memory, string memory, uint256, address, bytes32, uint256[] memory)
    {
        require(erc5267, "no eip712Domain");
        return salted
            ? (bytes1(0x1b), name, version, 0, address(this), bytes32(block.chainid), new uint256[](0))
            : (bytes1(0x0f), name, version, block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    function _digest(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR, structHash));
    }

    function _recover(bytes32 digest, bytes memory sig) private pure returns (address) {
        require(sig.length == 65, "signature length");
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(sig, 32))
            s := mload(add(sig, 64))
            v := byte(0, mload(add(sig, 96)))
        }
        require(uint256(s) <= HALF_ORDER, "signature s");
        address signer = ecrecover(digest, v, r, s);
        require(signer != address(0), "invalid signature");
        return signer;
    }
}
