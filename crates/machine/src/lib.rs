//! The board: memory map, device tree, boot loading, hart scheduling, virtual time.
