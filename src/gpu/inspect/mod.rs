//! The device looked at from outside a call: single shader functions, the product's rate, read-backs for the tests.
//!
//! | file | concern |
//! |---|---|
//! | `selftest.rs` | single shader functions on the device, for tests and users |
//! | `mul_bench.rs` | the product's forms timed at throughput on the device (`ShaderOps::fp_mul_rate`) |
//! | `testing.rs` | read-back helpers for the tests |

pub(crate) mod mul_bench;
pub(crate) mod selftest;
pub(crate) mod testing;
