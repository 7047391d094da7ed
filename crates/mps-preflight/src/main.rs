//! `mps-preflight`: will these two processes really share one physical GPU through a live CUDA MPS daemon?

fn main() {}
