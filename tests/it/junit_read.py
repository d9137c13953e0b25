#!/usr/bin/env python3
"""Reads a JUnit XML file with junitparser (an independent consumer, from PyPI) and
prints what it understood as JSON, for tests/it to assert on. Exit 3 if junitparser is
missing (ci/setup.sh installs it)."""
import json
import sys

try:
    from junitparser import Error, Failure, JUnitXml, Skipped
except ImportError:
    sys.stderr.write("junitparser is not installed: run ci/setup.sh (pip install junitparser)\n")
    sys.exit(3)

xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for suite in xml:
    cases = []
    for case in suite:
        # The verdict as a reader sees it: the message's first word (there is no `type`);
        # "REGRESSION (redwood): TPS ..." or, for a setup error, "ERROR: ...".
        results = [
            {
                "kind": type(r).__name__,
                "verdict": (r.message or "").split(": ", 1)[0].split(" (", 1)[0],
                "type": r.type,
                "message": r.message,
                "text": r.text or "",
            }
            for r in case.result
            if isinstance(r, (Failure, Error, Skipped))
        ]
        cases.append(
            {
                "name": case.name,
                "classname": case.classname,
                "results": results,
                # A case's numbers are its suite's properties named `<case>.<number>`
                # (junit-10.xsd allows no properties in a test case).
                "properties": {
                    p.name[len(case.name) + 1 :]: p.value
                    for p in suite.properties()
                    if p.name.startswith(case.name + ".")
                },
                "system_out": case.system_out or "",
            }
        )
    suites.append({"name": suite.name, "tests": suite.tests, "cases": cases})
print(json.dumps(suites))
