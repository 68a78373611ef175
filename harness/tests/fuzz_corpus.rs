//! Replays every seed of fixtures/fuzz/<target>/ through the fuzz
//! targets' functions (ukue_harness::explore::fuzzing), on stable Rust, so that CI
//! runs the corpus that fuzz/run.sh starts from (and any crash input
//! saved there as a regression).

use std::path::Path;

#[test]
fn every_seed_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/fuzz");
    let mut failures = Vec::new();
    for (name, target) in ukue_harness::explore::fuzzing::TARGETS {
        let dir = root.join(name);
        let mut seeds: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        seeds.sort();
        assert!(seeds.len() >= 4, "{}: too few seeds ({})", dir.display(), seeds.len());
        for seed in seeds {
            let data = std::fs::read(&seed).unwrap();
            if let Err(panic) = std::panic::catch_unwind(|| target(&data)) {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!(
                    "{name} {}: {message}\nreplay: cargo test -p ukue-harness --test fuzz_corpus \
                     (or: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run {name} {})",
                    seed.display(),
                    seed.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "seeds that fail their target:\n{}", failures.join("\n"));
}

/// The properties can fail: each `catches-NAME` seed of ops_vs_model,
/// alone, fails the reference running the step bug NAME as the fuzzer runs
/// it (in memory), and every step bug
/// (ukue_harness::subjects::broken::STEP_BUGS) has one; a line that is no
/// request is answered `invalid`, and a bad argument vector is a usage
/// error.
#[test]
fn the_targets_catch_what_they_look_for() {
    use ukue_harness::subjects::broken;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/fuzz/ops_vs_model");
    let mut missed = Vec::new();
    for name in broken::STEP_BUGS {
        let path = root.join(format!("catches-{name}"));
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let spec = broken::spec(broken::bug(name).unwrap()).unwrap();
        let broken = ukue_harness::explore::run::Target::InMemory(spec);
        let caught =
            std::panic::catch_unwind(|| ukue_harness::explore::fuzzing::ops_vs_model_on(&broken, &data))
                .is_err();
        if !caught {
            missed.push(format!(
                "{} does not fail under {name}: find a new one with \
                 `UKUE_BROKEN={name} fuzz/time-to-bug.sh ops_vs_model {name}` (then copy fuzz/logs/time-to-bug/ops_vs_model/{name}.crash)",
                path.display()
            ));
        }
    }
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(bug) = name.strip_prefix("catches-") {
            assert!(broken::STEP_BUGS.contains(&bug), "{name}: {bug} is no step bug of ukue-broken");
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));

    let mut driver = ukue_harness::subjects::driver::ReferenceDriver::new(ukue::Spec::builtin());
    let reply = driver.handle_line("{\"op\": \"claim\"}");
    let answer: ukue_harness::subjects::driver::Answer = serde_json::from_str(&reply).unwrap();
    assert_eq!(answer.error, Some(ukue_harness::subjects::driver::ErrorKind::Invalid), "{reply}");

    use clap::Parser;
    let e = ukue::cli::args::Cli::try_parse_from(["ukue", "add", "f", "q", "x", "--priority", "101"])
        .unwrap_err();
    assert_eq!(e.exit_code(), 2);
}

/// serve_requests can fail: each broken server of ukue-broken that a
/// request to the API shows has a `catches-NAME` seed, which alone fails
/// the target with that server's layer around the API, on one of the
/// target's own checks (every_seed_passes_its_target runs it against the
/// reference, which passes).
#[test]
fn each_broken_server_has_a_seed_that_finds_it() {
    use ukue_harness::subjects::broken;
    let root = repo().join("fixtures/fuzz/serve_requests");
    let mut missed = Vec::new();
    for bug in broken::BUGS.iter().filter(|b| b.serve != broken::ServeFlaw::None) {
        let path = root.join(format!("catches-{}", bug.name));
        if let Some(why) = bug.serve.beyond_the_api() {
            assert!(!path.exists(), "{}: {} is beyond the API ({why})", path.display(), bug.name);
            continue;
        }
        let data = std::fs::read(&path).unwrap_or_default();
        let outcome = std::panic::catch_unwind(|| {
            ukue_harness::explore::fuzz_serve::serve_requests_with(bug.serve, &data)
        });
        // serve-untrimmed-token hands its token to the environment.
        std::env::remove_var("UKUE_TOKEN");
        let message = match outcome {
            Ok(()) => String::new(),
            Err(panic) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        };
        if !message.starts_with("serve_requests: ") {
            missed.push(format!(
                "{} does not fail serve_requests under {} ({message:?}): find a new one with \
                 `fuzz/time-to-bug.sh serve_requests {}` (then copy \
                 fuzz/logs/time-to-bug/serve_requests/{}.crash)",
                path.display(),
                bug.name,
                bug.name,
                bug.name
            ));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

fn repo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The names of fuzz/fuzz_targets/*.rs.
fn fuzz_targets() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("fuzz/fuzz_targets"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn dictionary(target: &str) -> Vec<Vec<u8>> {
    let path = repo().join(format!("fuzz/dict/{target}.dict"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let entries = ukue_harness::explore::fuzzing::dictionary(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    entries.into_iter().map(|(_, bytes)| bytes).collect()
}

/// What .clusterfuzzlite/build.sh ships, without building: every target
/// of fuzz/fuzz_targets/ is a [[bin]] of fuzz/Cargo.toml (cargo fuzz
/// builds those), has its logic in TARGETS (the corpus replay above), a
/// dictionary libFuzzer can read and a seed corpus; build.sh --check
/// finds each, and nothing in fuzz/dict or fixtures/fuzz lacks a target.
#[test]
fn every_fuzz_target_is_built_and_shipped_with_its_dictionary_and_seeds() {
    let targets = fuzz_targets();
    assert!(targets.len() >= 4, "{targets:?}");
    let manifest = std::fs::read_to_string(repo().join("fuzz/Cargo.toml")).unwrap();
    let logic: Vec<&str> = ukue_harness::explore::fuzzing::TARGETS.iter().map(|(name, _)| *name).collect();
    for target in &targets {
        let bin = format!("name = \"{target}\"\npath = \"fuzz_targets/{target}.rs\"");
        assert!(manifest.contains(&bin), "fuzz/Cargo.toml has no [[bin]] {target}:\n{bin}");
        assert!(
            logic.contains(&target.as_str()),
            "{target} is not in ukue_harness::explore::fuzzing::TARGETS"
        );
        assert!(dictionary(target).len() >= 10, "fuzz/dict/{target}.dict: too few entries");
    }
    for dir in ["fuzz/dict", "fixtures/fuzz"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert!(targets.contains(&name), "{}: no fuzz target {name}", path.display());
        }
    }
    let out = std::process::Command::new("bash")
        .arg(repo().join(".clusterfuzzlite/build.sh"))
        .arg("--check")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "build.sh --check: {text}{}", String::from_utf8_lossy(&out.stderr));
    for target in &targets {
        assert!(text.lines().any(|l| l.starts_with(&format!("{target}: "))), "build.sh --check: {text}");
    }
}

/// Asserts that every word is an entry of `target`'s dictionary.
fn assert_in_dictionary(target: &str, words: impl IntoIterator<Item = String>) {
    let entries = dictionary(target);
    let missing: Vec<String> =
        words.into_iter().filter(|w| !entries.iter().any(|e| e == w.as_bytes())).collect();
    assert!(missing.is_empty(), "add to fuzz/dict/{target}.dict: {missing:?}");
}

/// cli_args.dict has every subcommand and long flag of the command line.
#[test]
fn the_cli_dictionary_has_every_subcommand_and_flag() {
    use clap::CommandFactory;
    let mut cli = ukue::cli::args::Cli::command();
    cli.build();
    let mut words = Vec::new();
    for sub in cli.get_subcommands() {
        words.push(sub.get_name().to_string());
        words.extend(sub.get_arguments().filter_map(|a| a.get_long()).map(|l| format!("--{l}")));
    }
    assert!(words.len() > 20, "{words:?}");
    assert_in_dictionary("cli_args", words);
}

/// open_bytes.dict has every table, index and column name of a file the
/// reference makes, and the meta keys.
#[test]
fn the_file_dictionary_has_every_name_of_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let file = ukue::Ukue::create(dir.path().join("f.ukue")).unwrap();
    let conn = file.connection();
    let column = |sql: &str| -> Vec<String> {
        let mut st = conn.prepare(sql).unwrap();
        let names = st.query_map([], |r| r.get(0)).unwrap();
        names.collect::<Result<_, _>>().unwrap()
    };
    let mut names = column("SELECT name FROM sqlite_schema");
    for table in ["ukue_meta", "ukue_jobs"] {
        names.extend(column(&format!("SELECT name FROM pragma_table_info('{table}')")));
    }
    names.extend(column("SELECT key FROM ukue_meta"));
    assert!(names.len() > 15, "{names:?}");
    assert_in_dictionary("open_bytes", names);
}

/// driver_lines.dict has every op and key of the requests among the
/// seeds' lines, quoted.
#[test]
fn the_driver_dictionary_has_every_op_and_key_of_the_seeds() {
    let mut words = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(repo().join("fixtures/fuzz/driver_lines")).unwrap() {
        let text = std::fs::read(entry.unwrap().path()).unwrap();
        for line in text.split(|b| *b == b'\n') {
            // Written back, a request has only the protocol's keys (serde
            // ignores unknown ones as it reads).
            let Ok(request) = serde_json::from_slice::<ukue_harness::subjects::driver::Request>(line) else {
                continue;
            };
            let serde_json::Value::Object(request) = serde_json::to_value(&request).unwrap() else {
                continue;
            };
            for (key, value) in request {
                if key == "op" {
                    words.insert(value.to_string());
                }
                words.insert(format!("\"{key}\""));
            }
        }
    }
    assert!(words.contains("\"stats\"") && words.contains("\"lease_ms\""), "{words:?}");
    assert_in_dictionary("driver_lines", words);
}

/// fuzz/Cargo.lock is what the fuzz crate's manifests ask for: `cargo
/// fuzz build` (.clusterfuzzlite/build.sh, fuzz/run.sh) leaves it as it
/// is (`cargo tree --locked` fails when the lock would change; offline,
/// it needs only this platform's packages, which the workspace has).
#[test]
fn the_fuzz_lock_file_is_up_to_date() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["tree", "--locked", "--offline", "--quiet", "--manifest-path"])
        .arg(repo().join("fuzz/Cargo.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fuzz/Cargo.lock needs updating (cd fuzz && cargo update -w): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
