//! Counters, samples, phases, traces and their exporters.
