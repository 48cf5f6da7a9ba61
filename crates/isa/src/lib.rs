//! RISC-V instruction decoding (RV64GC, compressed expanded), disassembly, CSR numbers.
