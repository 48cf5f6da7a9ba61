//! DMA: the DesignWare AXI DMA controller ([`axi::AxiDma`]) and the bus-master
//! view it moves data through ([`bus`]).

pub mod axi;
pub mod board;
pub mod bus;

pub use axi::{AxiDma, AxiDmaConfig, AxiDmaFdt};
pub use bus::{DmaFault, DmaMemory, DmaTarget, MasterBus, VecMemory};
