//! fdbserver's trace files (XML, one `<Event .../>` per line, `flow/Trace.cpp`) and
//! stderr warnings: the errors of a crashed server and the knobs it refused.

/// The value of attribute `key` of a trace event line (`<Event Type="..." .../>`), as
/// written, without XML unescaping; `None` when the line has no such attribute.
pub(crate) fn attr(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!(" {key}=\""))? + key.len() + 3;
    Some(line[start..].split('"').next()?.to_string())
}

/// The last `n` error events (Severity 40, SevError) of fdbserver trace XML, as
/// `Type (Error: ErrorDescription)`; FDB writes one `<Event .../>` per line
/// (`flow/Trace.cpp`). For the failure text of a crashed server.
pub fn trace_errors(trace: &str, n: usize) -> Vec<String> {
    let errors: Vec<String> = trace
        .lines()
        .filter(|l| attr(l, "Severity").as_deref() == Some("40"))
        .map(|l| {
            let kind = attr(l, "Type").unwrap_or_else(|| "?".into());
            match (attr(l, "Error"), attr(l, "ErrorDescription")) {
                (Some(e), Some(d)) => format!("{kind} ({e}: {d})"),
                (Some(e), None) => format!("{kind} ({e})"),
                _ => kind,
            }
        })
        .collect();
    errors[errors.len().saturating_sub(n)..].to_vec()
}

/// A `SlowTask` event: fdbserver's run loop ran one task without yielding for
/// `duration_s` seconds of wall time (`flow/Net2.cpp`, logged for a task over
/// `SLOWTASK_PROFILING_LOG_INTERVAL`, `Duration` attribute), ending at `time_unix_s`
/// (`Time`, Unix seconds). Every transaction the server serves waits as long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowTask {
    pub duration_s: f64,
    pub time_unix_s: f64,
}

/// The longest `SlowTask` event of fdbserver trace XML (one `<Event .../>` per line);
/// `None` when it has none with a finite `Duration`.
pub fn longest_slow_task(trace: &str) -> Option<SlowTask> {
    trace
        .lines()
        .filter(|l| attr(l, "Type").as_deref() == Some("SlowTask"))
        .filter_map(|l| {
            let number = |key| attr(l, key)?.parse::<f64>().ok().filter(|v| v.is_finite());
            Some(SlowTask {
                duration_s: number("Duration")?,
                time_unix_s: number("Time").unwrap_or(f64::NAN),
            })
        })
        .max_by(|a, b| a.duration_s.total_cmp(&b.duration_s))
}

/// Knobs an fdbserver refused, from its stderr and trace files. fdbserver only warns and
/// runs with the default (`fdbserver/core/ServerKnobs.cpp`, knob setup): on stderr
/// `WARNING: Invalid knob option 'NAME'` or `WARNING: Invalid value 'V' for knob option
/// 'NAME'`, in the trace `InvalidKnobName`/`InvalidKnobValue` events with `Knob` and `Value`
/// attributes. FDB 7.1 to 7.4 print the same lines and events
/// (`fdbclient/IKnobCollection.cpp`, `setupKnobs`, at tags 7.1.67, 7.2.9, 7.3.79, 7.4.6).
/// Returns one sentence per refused knob, no duplicates.
pub fn knob_problems(stderr: &str, trace: &str) -> Vec<String> {
    let quoted = |s: &str| s.split('\'').nth(1).map(str::to_string);
    let mut problems = Vec::new();
    let mut add = |p: String| {
        if !problems.contains(&p) {
            problems.push(p);
        }
    };
    for line in stderr.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("WARNING: Invalid knob option ") {
            if let Some(name) = quoted(rest) {
                add(format!("unknown knob '{name}'"));
            }
        } else if let Some(rest) = line.strip_prefix("WARNING: Invalid value ") {
            let mut q = rest.split('\'');
            if let (Some(value), Some(name)) = (q.nth(1), q.nth(1)) {
                add(format!("invalid value '{value}' for knob '{name}'"));
            }
        }
    }
    for line in trace.lines() {
        match (
            attr(line, "Type").as_deref(),
            attr(line, "Knob"),
            attr(line, "Value"),
        ) {
            (Some("InvalidKnobName"), Some(name), _) => add(format!("unknown knob '{name}'")),
            (Some("InvalidKnobValue"), Some(name), Some(value)) => {
                add(format!("invalid value '{value}' for knob '{name}'"))
            }
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_knobs_are_found_in_real_stderr_and_trace_events() {
        let stderr = include_str!("../testdata/fdbserver-stderr-invalid-knob.txt");
        let trace = include_str!("../testdata/trace-knob-events.txt");
        let want = ["unknown knob 'this_knob_does_not_exist'"];
        assert_eq!(knob_problems(stderr, ""), want);
        assert_eq!(knob_problems("", trace), want);
        assert_eq!(knob_problems(stderr, trace), want, "no duplicates");
        let bad_value = "WARNING: Invalid value 'lots' for knob option 'page_cache_4k'\n";
        assert_eq!(
            knob_problems(bad_value, ""),
            ["invalid value 'lots' for knob 'page_cache_4k'"]
        );
        let event =
            r#"<Event Severity="30" Type="InvalidKnobValue" Knob="page_cache_4k" Value="lots" />"#;
        assert_eq!(
            knob_problems("", event),
            ["invalid value 'lots' for knob 'page_cache_4k'"]
        );
        // ProgramStart's CommandLine names the knob too, but is no refusal.
        assert!(knob_problems("", trace.lines().nth(1).unwrap()).is_empty());
    }

    #[test]
    fn the_last_error_events_of_a_trace_are_named() {
        let trace = r#"<Event Severity="10" Type="ProgramStart" />
<Event Severity="40" Type="StorageServerFailed" Error="io_error" ErrorDescription="Disk i/o operation failed" />
<Event Severity="30" Type="InvalidKnobName" Knob="x" />
<Event Severity="40" Type="Crash" Signal="11" />"#;
        assert_eq!(
            trace_errors(trace, 5),
            [
                "StorageServerFailed (io_error: Disk i/o operation failed)",
                "Crash"
            ]
        );
        assert_eq!(trace_errors(trace, 1), ["Crash"]);
        assert!(trace_errors(include_str!("../testdata/trace-knob-events.txt"), 5).is_empty());
    }

    #[test]
    fn the_longest_slow_task_is_found_in_real_events() {
        // A real 8.0 storage server's event; the second is the same event as it logged a
        // 5.03 s block on a 2-vCPU VM (12306 M clocks).
        let trace = r#"<Event Severity="10" Time="1796461522.637792" DateTime="2026-12-05T09:05:22Z" Type="SlowTask" ID="0000000000000000" TaskID="5000" MClocks="2.55432" Duration="0.000983953" SampleRate="0.000255432" NumYields="1" ThreadID="5177721209187467716" Machine="127.0.0.1:11543" LogGroup="default" Roles="SS" />
<Event Severity="10" Time="1796461539.428704" DateTime="2026-12-05T09:05:39Z" Type="SlowTask" ID="0000000000000000" TaskID="8600" MClocks="12306.1" Duration="5.03" SampleRate="1" NumYields="1" ThreadID="5177721209187467716" Machine="127.0.0.1:11543" LogGroup="default" Roles="SS" />
<Event Severity="10" Time="1796461540.1" Type="SlowTask" Duration="0.0308576" />
<Event Severity="10" Time="1796461541.1" Type="NotSlow" Duration="9" />
<Event Severity="10" Type="SlowTask" Duration="nan" />"#;
        assert_eq!(
            longest_slow_task(trace),
            Some(SlowTask {
                duration_s: 5.03,
                time_unix_s: 1796461539.428704
            })
        );
        assert_eq!(
            longest_slow_task(trace.lines().next().unwrap())
                .unwrap()
                .duration_s,
            0.000983953
        );
        assert_eq!(
            longest_slow_task(include_str!("../testdata/trace-knob-events.txt")),
            None
        );
    }
}
