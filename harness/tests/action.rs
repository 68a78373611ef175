//! The composite action's script (.github/conformance.sh, which action.yml
//! runs) against the reference: a shard's reports and the runner's status;
//! action.yml and the workflows parsed, and the workflows linted.

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

fn script(out: &Path, env: &[(&str, &str)]) -> (i32, String) {
    let output = Command::new("bash")
        .arg(repo().join(".github/conformance.sh"))
        .env("UKUE_RUNNER", conformance())
        .env("UKUE_OUT", out)
        .env("GITHUB_OUTPUT", out.join("github-output"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text)
}

#[test]
fn the_actions_script_runs_a_shard_against_the_reference() {
    if !have("bash") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let reference = reference();
    let (code, text) = script(
        &out,
        &[
            ("UKUE_IMPL", reference.to_str().unwrap()),
            ("UKUE_PARTITION", "count:1/2"),
            ("UKUE_STRICT", "true"),
            ("UKUE_ARGS", "--cases format/*"),
        ],
    );
    assert_eq!(code, 0, "{text}");
    let json = std::fs::read_to_string(out.join("report.json")).unwrap();
    let cases = json.lines().filter(|l| l.contains("\"id\"")).count();
    let all = ukue_harness::cases::all().iter().filter(|c| c.id.starts_with("format/")).count();
    assert_eq!(cases, all.div_ceil(2), "shard 1 of 2 of format/*: {json}");
    assert!(std::fs::read_to_string(out.join("junit.xml")).unwrap().contains("<testsuite name=\"format\""));
    assert!(text.contains(" passed"), "the summary is printed: {text}");
    let output = std::fs::read_to_string(out.join("github-output")).unwrap();
    assert_eq!(output, "artifact=ukue-conformance-count-1-2\n");

    // A failing implementation fails the step, and still leaves its reports.
    let out = dir.path().join("failing");
    let broken = broken();
    let (code, text) = script(
        &out,
        &[
            ("UKUE_IMPL", broken.to_str().unwrap()),
            ("UKUE_BROKEN", "reversed-priority"),
            ("UKUE_ARGS", "--cases steps/claim-order-priority"),
        ],
    );
    assert_eq!(code, 1, "{text}");
    assert!(std::fs::read_to_string(out.join("junit.xml")).unwrap().contains("<failure"));
    // The runner has --html: the script writes the page, with the failing
    // case's timeline.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("id=\"case-steps-claim-order-priority\"") && html.contains("<svg class=\"timeline"),
        "{html}"
    );
}

#[test]
fn the_action_runs_the_script_with_its_inputs() {
    let action = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    for needed in
        ["using: composite", "$GITHUB_ACTION_PATH/.github/conformance.sh", "actions/upload-artifact"]
    {
        assert!(action.contains(needed), "action.yml lacks {needed}");
    }
    for input in ["impl", "partition", "expected-failures", "strict", "install", "package"] {
        assert!(action.contains(&format!("\n  {input}:\n")), "action.yml lacks the input {input}");
        let env = format!("UKUE_{}: ${{{{ inputs.{input} }}}}", input.to_uppercase().replace('-', "_"));
        assert!(action.contains(&env), "action.yml does not pass {input} to the script ({env})");
    }
}

/// YAML that parses, as GitHub reads it: a file of `key: value` whose
/// mistakes (a tab, a bad indent, an unquoted `: `) otherwise show only on
/// GitHub, after a push.
fn yaml(path: &Path) -> serde_yaml::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_action_and_the_workflows_parse_and_pass_actionlint() {
    let action = yaml(&repo().join("action.yml"));
    assert_eq!(action["runs"]["using"], "composite");
    assert_eq!(action["inputs"]["install"]["default"], "wheel", "the action installs the wheel by default");
    let steps = action["runs"]["steps"].as_sequence().expect("the action's steps");
    assert!(
        steps.iter().all(|s| s.get("run").is_none() || s.get("shell").is_some()),
        "a composite run step needs a shell"
    );

    let release = repo().join(".github/workflows/release.yml");
    let workflow = yaml(&release);
    let targets: Vec<&str> = workflow["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .expect("the build matrix")
        .iter()
        .filter_map(|t| t["target"].as_str())
        .collect();
    for target in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "aarch64-apple-darwin",
        "x86_64-apple-darwin",
    ] {
        assert!(targets.contains(&target), "release.yml builds no wheel for {target}: {targets:?}");
    }
    assert!(
        workflow["on"]["push"]["tags"].as_sequence().is_some_and(|t| !t.is_empty()),
        "release.yml runs on a tag"
    );
    // The tests the gate leaves to the `full` profile run before a release
    // and every night (docs/testing.md).
    assert_eq!(workflow["jobs"]["tests"]["uses"], "./.github/workflows/full-tests.yml");
    let waits = |job: &str| {
        workflow["jobs"][job]["needs"].as_sequence().is_some_and(|n| n.iter().any(|j| j == "tests"))
    };
    assert!(waits("release") && waits("pypi"), "a release waits for the full tests");
    let full = yaml(&repo().join(".github/workflows/full-tests.yml"));
    assert!(
        full["on"]["schedule"].as_sequence().is_some_and(|s| !s.is_empty()),
        "full-tests.yml runs nightly"
    );
    assert!(full["on"].get("workflow_call").is_some(), "release.yml calls full-tests.yml");
    let steps = full["jobs"]["full"]["steps"].as_sequence().expect("full-tests.yml's steps");
    assert!(
        steps.iter().any(|s| s["run"] == "bash .ci/run" && s["env"]["UKUE_TEST_PROFILE"] == "full"),
        "full-tests.yml runs .ci/run with the full profile"
    );

    // cargo-mutants' workflow: every mutant of src/ in a matrix of shards,
    // and only the lines a pull request changes on a pull request.
    let mutants = repo().join(".github/workflows/mutants.yml");
    let workflow = yaml(&mutants);
    let shards = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"].as_sequence().expect("the shards");
    let run = |job: &str| {
        let steps = workflow["jobs"][job]["steps"].as_sequence().expect("the job's steps");
        steps.iter().filter_map(|s| s["run"].as_str()).collect::<Vec<_>>().join("\n")
    };
    assert!(shards.len() > 1 && run("shard").contains(&format!("--shard \"${{SHARD}}/{}\"", shards.len())));
    assert!(run("in-diff").contains("--in-diff"), "mutants.yml runs --in-diff on a pull request");

    if !have("actionlint") {
        return;
    }
    let mut workflows: Vec<std::path::PathBuf> = std::fs::read_dir(repo().join(".github/workflows"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    workflows.sort();
    let out =
        Command::new("actionlint").args(&workflows).current_dir(repo()).output().expect("actionlint runs");
    assert!(
        out.status.success(),
        "actionlint: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
