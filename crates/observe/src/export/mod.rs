//! Views of one record. All output is deterministic byte for byte: no
//! hash-map order, no host time, fixed float formatting.
