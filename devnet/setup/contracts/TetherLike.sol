// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

import "DevERC20.sol";

/// A USDT-like token for the devnet: plain ERC-20 with no permit and no
/// EIP-712 domain. With `resetRule` set it behaves as ethereum USDT does:
/// `approve` to a non-zero value reverts while the current allowance is
/// non-zero, so a changed allowance must go through 0 first. Test fixture only.
contract TetherLike is DevERC20 {
    bool public immutable resetRule;

    constructor(string memory name_, string memory symbol_, uint8 decimals_, bool resetRule_)
        DevERC20(name_, symbol_, decimals_)
    {
        resetRule = resetRule_;
    }

    function approve(address spender, uint256 value) external override returns (bool) {
        require(!(resetRule && value != 0 && allowance[msg.sender][spender] != 0), "reset allowance to 0 first");
        _approve(msg.sender, spender, value);
        return true;
    }
}
