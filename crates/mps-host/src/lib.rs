//! Live, read-only, bounded observation of a host's CUDA MPS state.
