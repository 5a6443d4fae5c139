"""Summarizes a regrtest --junit-xml file: one line per test case ("name outcome"), sorted,
to stdout, and "tests passed failed errors skipped" to stderr."""
import sys
import xml.etree.ElementTree as ET

counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
lines = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    tags = {child.tag for child in case}
    if "failure" in tags:
        outcome = "failed"
    elif "error" in tags:
        outcome = "errors"
    elif "skipped" in tags or case.get("status") == "skipped":
        outcome = "skipped"
    else:
        outcome = "passed"
    counts[outcome] += 1
    lines.append("%s %s" % (case.get("name"), outcome))
print("\n".join(sorted(lines)))
print("%d %d %d %d %d" % (len(lines), counts["passed"], counts["failed"], counts["errors"],
                          counts["skipped"]), file=sys.stderr)
