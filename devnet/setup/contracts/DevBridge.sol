// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

interface IERC20Pull {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// The devnet's bridge: a deposit locks the tokens here and says where they
/// go; the devnet's swap provider watches for deposits and releases the
/// output on the destination chain.
contract DevBridge {
    event Deposit(address indexed token, address indexed from, uint256 amount, uint256 toChainId, address toToken, address to);

    function deposit(address token, uint256 amount, uint256 toChainId, address toToken, address to) external {
        require(amount > 0, "nothing to bridge");
        require(IERC20Pull(token).transferFrom(msg.sender, address(this), amount), "transfer failed");
        emit Deposit(token, msg.sender, amount, toChainId, toToken, to);
    }
}
