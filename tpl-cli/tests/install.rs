//! What a user installs beside the binary, through the built binary: `tpl completions SHELL`
//! (every script parses in its shell and completes a command), `tpl man` (every page
//! renders), both naming every command that `tpl --help` lists (read from the help, not from
//! the code that generates them); and `tpl --version` with the `build` object of the JSON.
//!
//! The shells and `mandoc` are found on `PATH`; one that is absent is skipped with a note,
//! unless `TPL_REQUIRE_ALL=1` (set by `scripts/test-all`, which installs them), where it fails.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

/// Every command path under `tpl`, read from the "Commands:" lists of `--help`, recursively
/// (`["loss"]`, `["stream", "push"]`, …), without clap's `help`.
fn command_paths() -> Vec<Vec<String>> {
    fn under(prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut args: Vec<&str> = prefix.iter().map(String::as_str).collect();
        args.push("--help");
        let run = tpl_ok(&args);
        let listed = run.stdout.lines().skip_while(|l| !l.starts_with("Commands:")).skip(1);
        let names: Vec<String> = listed
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|n| n != "help")
            .collect();
        for name in names {
            let path: Vec<String> = prefix.iter().cloned().chain([name]).collect();
            out.push(path.clone());
            under(&path, out);
        }
    }
    let mut out = Vec::new();
    under(&[], &mut out);
    out
}

/// A program on PATH, or `None` with a note (a failure under `TPL_REQUIRE_ALL=1`).
fn tool(name: &str) -> Option<()> {
    let found = Command::new(name)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if found {
        return Some(());
    }
    assert!(
        std::env::var("TPL_REQUIRE_ALL").as_deref() != Ok("1"),
        "{name} is not on PATH (TPL_REQUIRE_ALL=1)"
    );
    eprintln!("note: {name} is not on PATH: its check is skipped");
    None
}

/// Runs `program args` and returns (success, stdout + stderr).
fn run(program: &str, args: &[&str], dir: &Path) -> (bool, String) {
    match Command::new(program).args(args).current_dir(dir).output() {
        Ok(o) => (
            o.status.success(),
            format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
        ),
        Err(e) => (false, format!("cannot run {program}: {e}")),
    }
}

/// `tpl completions SHELL` written to `file` in a scratch folder: the folder, and the path.
fn script_file(shell: &str, file: &str) -> (Scratch, String) {
    let d = Scratch::new(&format!("shells_{shell}"));
    let path = d.file(file, &tpl_ok(&["completions", shell]).stdout);
    (d, path)
}

#[test]
fn the_help_lists_the_commands_the_tests_expect() {
    let paths: Vec<String> = command_paths().iter().map(|p| p.join(" ")).collect();
    for expected in ["loss", "release", "stream", "stream push", "stream rekey", "demo", "completions", "man"]
    {
        assert!(paths.iter().any(|p| p == expected), "{expected} in {paths:?}");
    }
}

/// Whether a shell's script completes the command at `path`, by the construct that offers it
/// or switches to it (not a word of some help text): the construct, for the message.
fn completes(shell: &str, script: &str, path: &[String]) -> (bool, String) {
    let last = path.last().map(String::as_str).unwrap_or_default();
    let construct = match shell {
        "bash" => format!("cmd=\"tpl__subcmd__{}\"", path.join("__subcmd__")),
        // A case branch of its own line: `(push)`.
        "zsh" => return (script.lines().any(|l| l.trim() == format!("({last})")), format!("({last})")),
        "fish" => format!("-f -a \"{last}\""),
        "powershell" => format!("'tpl;{}' {{", path.join(";")),
        _ => format!("&'tpl;{}'= {{", path.join(";")),
    };
    (script.contains(&construct), construct)
}

#[test]
fn every_completion_script_names_every_command() {
    let paths = command_paths();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = tpl_ok(&["completions", shell]).stdout;
        for path in &paths {
            let (found, construct) = completes(shell, &script, path);
            assert!(found, "{shell} completes `tpl {}`: no {construct:?}", path.join(" "));
        }
    }
}

#[test]
fn the_bash_script_parses_and_completes_a_subcommand() {
    let (d, script) = script_file("bash", "tpl.bash");
    let (ok, out) = run("bash", &["-n", &script], &d.dir);
    assert!(ok, "bash -n: {out}");
    // What bash asks when a user types `tpl stream p<TAB>`.
    let complete = format!(
        "source '{script}'; COMP_WORDS=(tpl stream p); COMP_CWORD=2; _tpl tpl p stream; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    let (ok, out) = run("bash", &["-c", &complete], &d.dir);
    assert!(ok && out.lines().any(|l| l == "push"), "bash completes `tpl stream p` to push: {out}");
}

#[test]
fn the_zsh_script_parses_and_defines_its_function() {
    let Some(()) = tool("zsh") else { return };
    let (d, script) = script_file("zsh", "_tpl");
    let (ok, out) = run("zsh", &["-n", &script], &d.dir);
    assert!(ok, "zsh -n: {out}");
    let load = format!(
        "autoload -U compinit; compinit -u -d '{}'; source '{script}'; print $+functions[_tpl]",
        d.path("zcompdump")
    );
    let (ok, out) = run("zsh", &["-f", "-c", &load], &d.dir);
    assert!(ok && out.trim_end().ends_with('1'), "zsh defines _tpl: {out}");
}

#[test]
fn the_fish_script_parses_and_completes_a_subcommand() {
    let Some(()) = tool("fish") else { return };
    let (d, script) = script_file("fish", "tpl.fish");
    let (ok, out) = run("fish", &["--no-execute", &script], &d.dir);
    assert!(ok, "fish --no-execute: {out}");
    let complete = format!("source '{script}'; complete -C 'tpl stream p'");
    let (ok, out) = run("fish", &["--no-config", "-c", &complete], &d.dir);
    assert!(ok && out.lines().any(|l| l.starts_with("push")), "fish completes `tpl stream p` to push: {out}");
}

#[test]
fn the_elvish_script_runs_and_completes_a_subcommand() {
    let Some(()) = tool("elvish") else { return };
    let d = Scratch::new("shells_elvish");
    // Outside an interactive shell elvish has no `edit:` module: the script runs against
    // stand-ins of the two names it uses, then completes `tpl stream p`.
    let script = tpl_ok(&["completions", "elvish"]).stdout;
    let standalone = format!(
        "var arg-completer = [&]\nfn complex-candidate {{|text &display=''| echo $text }}\n{}\n$arg-completer[tpl] tpl stream p\n",
        script
            .replace("edit:completion:arg-completer", "arg-completer")
            .replace("edit:complex-candidate", "complex-candidate")
    );
    let file = d.file("tpl.elv", &standalone);
    let (ok, out) = run("elvish", &["-norc", &file], &d.dir);
    assert!(ok && out.lines().any(|l| l == "push"), "elvish completes `tpl stream p` with push: {out}");
}

#[test]
fn man_prints_the_top_page_and_writes_one_page_per_command() {
    let top = tpl_ok(&["man"]).stdout;
    assert!(top.starts_with('.') && top.contains(".TH tpl 1"), "roff of tpl.1: {}", truncate(&top));
    let d = Scratch::new("shells_man");
    let out = d.path("man1");
    let listed = tpl_ok(&["man", "--out", &out]).stdout;
    let mut expected: Vec<String> = vec!["tpl.1".into()];
    expected.extend(command_paths().iter().map(|p| format!("tpl-{}.1", p.join("-"))));
    let mut written: Vec<String> = std::fs::read_dir(&out)
        .map(|dir| dir.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    written.sort();
    expected.sort();
    assert_eq!(written, expected, "one page per command");
    assert_eq!(listed.lines().count(), expected.len(), "the paths written are printed: {listed}");
    for path in command_paths() {
        assert!(top.contains(&format!("tpl\\-{}", path[0])), "tpl.1 lists tpl-{}", path[0]);
    }
}

#[test]
fn every_page_renders_in_man_and_passes_mandoc_lint() {
    let d = Scratch::new("shells_man_render");
    let out = d.path("man1");
    let pages: Vec<String> = tpl_ok(&["man", "--out", &out]).stdout.lines().map(str::to_string).collect();
    let man = tool("man").is_some();
    let mandoc = tool("mandoc").is_some();
    for page in &pages {
        let name = Path::new(page).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if man {
            let rendered =
                Command::new("man").args(["-l", page]).env("MANWIDTH", "100").env("MANPAGER", "cat").output();
            let rendered =
                rendered.map(|o| (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned()));
            let (ok, text) = rendered.unwrap_or_else(|e| (false, e.to_string()));
            assert!(
                ok && text.contains("NAME") && text.contains(&name),
                "man -l {page}: {}",
                truncate(&text)
            );
        }
        if mandoc {
            // Errors only: clap_mangen's spacing draws style warnings that change nothing shown.
            let (ok, text) = run("mandoc", &["-T", "lint", "-W", "error", page], &d.dir);
            assert!(ok && text.trim().is_empty(), "mandoc -T lint {page}: {text}");
        }
    }
}

#[test]
fn completions_and_man_refuse_other_formats_and_unknown_shells() {
    let d = Scratch::new("install_formats");
    let out = d.path("man1");
    for args in [&["completions", "bash", "--format", "json"][..], &["man", "--format", "csv", "--out", &out]]
    {
        let run = tpl(args);
        assert_eq!(run.code, Some(2), "{}", run.describe());
        assert!(
            run.stderr.contains("--format") && run.stderr.contains("prints a script or a page"),
            "{}",
            run.describe()
        );
        assert!(run.stdout.is_empty(), "{}", run.describe());
    }
    assert!(!d.dir.join("man1").exists(), "refused before any page is written");
    usage_error(&["completions", "tcsh"]);
}

#[test]
fn version_says_commit_features_and_build() {
    let long = tpl_ok(&["--version"]).stdout;
    let first = long.lines().next().unwrap_or_default();
    assert_eq!(first, format!("tpl {}", env!("CARGO_PKG_VERSION")), "{long}");
    for field in ["commit:", "features:", "rustc:", "build:"] {
        assert!(long.lines().any(|l| l.starts_with(field)), "--version has {field}: {long}");
    }
    assert!(long.contains("tpl-core/parallel"), "the default features are listed: {long}");
    // Built in a git checkout (as these tests are), the commit is the checkout's HEAD then.
    let head =
        Command::new("git").args(["rev-parse", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    if let (Ok(head), Err(_)) = (head, std::env::var("TPL_BUILD_COMMIT")) {
        let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
        if !head.is_empty() {
            assert!(long.lines().any(|l| l == format!("commit:   {head}")), "commit {head} in {long}");
        }
    }
    let short = tpl_ok(&["-V"]).stdout;
    assert!(short.starts_with(&format!("tpl {} (commit ", env!("CARGO_PKG_VERSION"))), "{short}");
}

#[test]
fn every_json_provenance_carries_the_build() {
    let d = Scratch::new("install_build_json");
    let counts = d.file("c.csv", "timestamp_bucket,c0,c1\n1,3,4\n2,5,6\n");
    let version = tpl_ok(&["--version"]).stdout;
    let db = d.path("s.db");
    tpl_ok(&["stream", "init", "--db", &db, "--scheme", "uniform", "--epsilon", "1", "--window", "2"]);
    for args in [
        vec!["release", "--counts", &counts, "--scheme", "uniform", "--epsilon", "1", "--window", "2"],
        vec![
            "compare",
            "--counts",
            &counts,
            "--epsilon",
            "1",
            "--window",
            "2",
            "--schemes",
            "uniform",
            "--runs",
            "1",
        ],
        vec!["stream", "status", "--db", &db],
    ] {
        let out = json(&args);
        let build = &out["build"];
        assert_eq!(build["version"], env!("CARGO_PKG_VERSION"), "{args:?}: {out}");
        assert_eq!(out["version"], build["version"], "{args:?}");
        let features: Vec<&str> =
            build["features"].as_array().into_iter().flatten().filter_map(|f| f.as_str()).collect();
        assert!(version.contains(&features.join(", ")) && !features.is_empty(), "{args:?}: {build}");
        match build["commit"].as_str() {
            Some(commit) => assert!(version.contains(commit), "{args:?}: {build}"),
            None => assert!(version.contains("commit:   unknown"), "{args:?}: {build}"),
        }
        assert_eq!(build["debug_build"], cfg!(debug_assertions), "the build these tests run");
    }
}
