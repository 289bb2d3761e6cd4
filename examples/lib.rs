//! The examples' package (`examples/Cargo.toml`): the examples are its `[[example]]` targets,
//! each a binary of its own (`cargo run --release --example msm -- --help`). Cargo needs a
//! library or binary target in a package; this one is empty.
