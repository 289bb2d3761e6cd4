//! Every example's command line, parsed without running anything: `--help` works and names
//! every flag (with its default), the defaults parse, and an unknown flag or an out-of-range
//! value is an error.

#[path = "../examples/common/cli.rs"]
mod cli;
#[path = "../examples/compiler/cli.rs"]
mod report_cli;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

/// The checks for one command line; `bad` holds out-of-range or malformed values.
fn check<C: Parser + CommandFactory + std::fmt::Debug>(name: &str, bad: &[&[&str]]) {
    C::command().debug_assert();
    let help = C::command().render_long_help().to_string();
    for arg in C::command().get_arguments() {
        if let Some(long) = arg.get_long() {
            assert!(
                help.contains(&format!("--{long}")),
                "{name}: --{long} not in help"
            );
            if !arg.get_default_values().is_empty() {
                let line = help.split(&format!("--{long}")).nth(1).expect("described");
                let next = line.find("\n  -").unwrap_or(line.len());
                assert!(
                    line[..next].contains("[default:"),
                    "{name}: --{long} does not show its default"
                );
            }
        }
    }
    let err = C::try_parse_from([name, "--help"]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DisplayHelp, "{name}");
    C::try_parse_from([name]).unwrap_or_else(|e| panic!("{name} defaults: {e}"));
    let err = C::try_parse_from([name, "--bogus"]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnknownArgument, "{name}");
    for args in bad {
        let argv: Vec<&str> = std::iter::once(name).chain(args.iter().copied()).collect();
        assert!(
            C::try_parse_from(&argv).is_err(),
            "{name} accepted {args:?}"
        );
    }
}

#[test]
fn every_example_parses_its_flags_strictly() {
    check::<cli::MsmCli>(
        "msm",
        &[
            &["--log-n", "27"],
            &["--max-binding", "100"],
            &["--log-n", "x"],
            &["--window", "0"],
            &["--window", "17"],
            &["--repeat", "0"],
            &["--sre", "fastest"],
            &["--sre", "indexed:1.5"],
            &["--scalars", "bits:256"],
            &["--arithmetic", "limbs64"],
        ],
    );
    check::<cli::CrossoverCli>(
        "crossover",
        &[
            &["--max-log", "0"],
            &["--reps", "0"],
            &["--gpu-max-log", "40"],
        ],
    );
    check::<cli::SreStatsCli>(
        "sre_stats",
        &[
            &["--window", "4,17"],
            &["--strategy", "array,best"],
            &["--threshold", "0.8,2"],
            &["--digits", "both"],
        ],
    );
    check::<cli::CutoffCli>("cutoff", &[&["--reps", "0"]]);
    check::<cli::KzgCli>("kzg", &[&["--log-degree", "25"], &["--polys", "0"]]);
    check::<cli::Groth16Cli>(
        "groth16",
        &[&["--log-constraints", "0"], &["--proofs", "0"]],
    );
    check::<cli::ProverCallsCli>("prover_calls", &[&["--batch", "0"], &["--log-n", "0"]]);
    check::<cli::ProfilesCli>(
        "profiles",
        &[
            &["--logs", "14,99"],
            &["--reps", "0"],
            &["--rate-threads", "1"],
        ],
    );
    check::<report_cli::ReportCli>(
        "compiler_report",
        &[
            &["--parts", "9"],
            &["--timeout", "0"],
            &["--worker", "rdna2", "bn254-g1"],
            &["--stages-only", "--ops-only"],
        ],
    );
    check::<cli::FieldRateCli>(
        "field_rate",
        &[
            &["--threads", "0"],
            &["--chain", "0"],
            &["--curve", "bls12-378"],
        ],
    );
}

#[test]
fn parsed_values_reach_the_configuration() {
    let c = cli::MsmCli::try_parse_from([
        "msm",
        "--log-n",
        "10",
        "--window",
        "5",
        "--sre",
        "indexed:none",
        "--scalars",
        "bits:8",
        "--arithmetic",
        "limbs13",
        "--routed",
    ])
    .unwrap();
    assert_eq!((c.log_n, c.window), (10, Some(5)));
    let config = c.engine.config();
    assert_eq!(config.arithmetic, Some(gpu_msm::Arithmetic::Limbs13));
    assert_eq!(config.force_backend, None);
    assert!(matches!(c.sre, gpu_msm::SreMode::On(o) if o.early_stop.is_none()));
    // Without --routed the examples force the GPU path.
    let c = cli::MsmCli::try_parse_from(["msm"]).unwrap();
    assert_eq!(c.engine.config().force_backend, Some(gpu_msm::Backend::Gpu));
    // The profiles' old names still parse, to the renamed profiles (issue 48).
    for (old, new) in [
        ("limbs32", "limbs29"),
        ("limbs32-edwards", "limbs29-edwards"),
    ] {
        let parse = |name| cli::MsmCli::try_parse_from(["msm", "--arithmetic", name]).unwrap();
        assert_eq!(
            parse(old).engine.config().arithmetic,
            parse(new).engine.config().arithmetic
        );
        assert!(parse(new).engine.config().arithmetic.is_some());
    }
    let s = cli::SreStatsCli::try_parse_from(["sre_stats", "--threshold", "0.5,none"]).unwrap();
    assert_eq!(s.threshold, vec![Some(0.5), None]);
}
