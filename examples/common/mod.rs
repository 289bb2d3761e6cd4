//! Command-line helpers shared by the examples.

/// The value after `--name` parsed as T, `None` when the flag is absent; exits with a usage
/// error when the value is missing or does not parse.
pub fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let i = args.iter().position(|a| a == name)?;
    match args.get(i + 1).map(|v| v.parse()) {
        Some(Ok(v)) => Some(v),
        _ => {
            eprintln!("{name} needs a value");
            std::process::exit(2)
        }
    }
}
