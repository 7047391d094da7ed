//! NVIDIA GPU UUID canonicalisation and `CUDA_VISIBLE_DEVICES` parsing. Pure: no I/O.
