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
    // Real valgrind's gdbserver makes FIFOs and shared memory named after the pid in
    // TMPDIR (default /tmp), opened without O_EXCL: the double refuses to run where they
    // would be made, in a directory others may write.
    if !options.iter().any(|o| *o == "--vgdb=no") {
        let tmp = std::env::var_os("TMPDIR").unwrap_or_else(|| "/tmp".into());
        let shared = std::fs::metadata(&tmp)
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o022 != 0)
            .unwrap_or(true);
        if shared {
            eprintln!(
                "double: valgrind's gdbserver would make its pipes in {}, which others may \
                 write: give --vgdb=no or a private TMPDIR",
                std::path::Path::new(&tmp).display()
            );
            std::process::exit(1);
        }
    }
    let out = options
        .iter()
        .find_map(|o| o.strip_prefix("--cachegrind-out-file="))
        .unwrap_or("cachegrind.out.double");
    let program = &args[options.len()..];
    eprintln!("==1== Cachegrind, a high-precision tracing profiler");
    // What the gate gave it, for tests: where its temporary files would go.
    eprintln!(
        "==1== TMPDIR={}",
        std::env::var("TMPDIR").unwrap_or_default()
    );
    eprintln!("==1== Command: {}", program.join(" "));
    let status = Command::new(&program[0])
        .args(&program[1..])
        .env("PERFGATE_DOUBLE_CACHEGRIND_OUT", out)
        .status()
        .expect("the program under valgrind");
    std::process::exit(status.code().unwrap_or(1));
}
