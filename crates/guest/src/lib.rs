//! Guest image recipes: Debian packages, kernel builds, initramfs, the agent.
