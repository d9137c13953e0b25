//! The test double's `valgrind`: `valgrind --version`, and `valgrind --tool=cachegrind
//! [--OPTION...] PROGRAM ARGS...`, which runs PROGRAM with `PERFGATE_DOUBLE_CACHEGRIND_OUT`
//! set to `--cachegrind-out-file` (the double's fdbserver writes its instruction counts
//! there, as cachegrind would) and exits with PROGRAM's status, printing Valgrind's banner
//! on stderr as the real one does.

use std::process::Command;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--version") {
        println!("valgrind-3.19.0");
        return;
    }
    let options: Vec<&String> = args.iter().take_while(|a| a.starts_with("--")).collect();
    assert!(
        options.iter().any(|o| *o == "--tool=cachegrind"),
        "the gate runs cachegrind: {args:?}"
    );
    let out = options
        .iter()
        .find_map(|o| o.strip_prefix("--cachegrind-out-file="))
        .unwrap_or("cachegrind.out.double");
    let program = &args[options.len()..];
    eprintln!("==1== Cachegrind, a high-precision tracing profiler");
    eprintln!("==1== Command: {}", program.join(" "));
    let status = Command::new(&program[0])
        .args(&program[1..])
        .env("PERFGATE_DOUBLE_CACHEGRIND_OUT", out)
        .status()
        .expect("the program under valgrind");
    std::process::exit(status.code().unwrap_or(1));
}
