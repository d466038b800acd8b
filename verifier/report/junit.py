"""JUnit XML report, for CI test-result views (GitHub, GitLab, Jenkins, Buildkite).

One <testsuite> per kernel, one <testcase> per (dtype, check class) cell named like ``value[bf16]`` with
the kernel name as classname: FAIL cells carry a <failure> with every finding's message and repro,
skipped cells a <skipped> with the reason, and each testcase a ``check`` property and the ``file`` and ``line``
where the kernel is declared. A kernel whose battery hit an internal error gets one more testcase, ``battery``,
with an <error>; a kernel whose values were not checked (verdict ``unchecked``) one more, ``values``, skipped with
the reason, so no CI view counts it as passed.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from verifier.results.findings import CHECK_CLASSES
from verifier.results.paths import declaration_line, relative, shown_repro, source_root
from verifier.results.run import cell, rows, sorted_findings

# Characters XML 1.0 cannot hold (compiler output may carry ANSI escapes): written as-is they make the file unparsable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _cells(report) -> list[tuple[str, str, str]]:
    """(dtype tag, check, value) for every cell this kernel has, in table order."""
    out = []
    for tag in rows(report):
        for check in CHECK_CLASSES:
            v = cell(report, tag, check)
            if v is not None:
                out.append((tag, check, v))
    return out


def _findings_text(fs, root) -> str:
    parts = []
    for f in fs:
        where = ", ".join(x for x in (f.severity, f.dtype, f.input and f"case {f.input}",
                                      f"shape {tuple(f.shape)}" if f.shape else "") if x)
        loc = f" at {relative(f.file, root)}:{f.line}" if f.file else ""
        parts.append(f"[{f.check}] {where}{loc}\n{f.message}" + (f"\nrepro: {shown_repro(f.repro, root)}" if f.repro else ""))
    return "\n\n".join(parts)


def _testcase(suite, name: str, classname: str, where: tuple, check: str) -> ET.Element:
    """``where``: (spec file, the line declaring the kernel), as the ``file`` and ``line`` attributes CI views link."""
    tc = ET.SubElement(suite, "testcase", name=name, classname=classname)
    file, line = where
    if file:
        tc.set("file", file)
        tc.set("line", str(line))
    props = ET.SubElement(tc, "properties")
    ET.SubElement(props, "property", name="check", value=check)
    return tc


def to_element(result) -> ET.Element:
    root = source_root(result)
    top = ET.Element("testsuites", name="kernel-verifier")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    time_total = 0.0
    for r in result.reports:
        suite = ET.SubElement(top, "testsuite", name=r.spec.name)
        spec_file = relative(r.spec.origin, root) or ""
        where = (spec_file, declaration_line(root, r.spec))
        props = ET.SubElement(suite, "properties")
        for k, v in (("op", r.spec.op), ("kind", r.spec.kind), ("verdict", r.verdict), ("spec", spec_file)):
            ET.SubElement(props, "property", name=k, value=str(v))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for tag, check, v in _cells(r):
            tc = _testcase(suite, check if tag == "*" else f"{check}[{tag}]", r.spec.name, where, check)
            counts["tests"] += 1
            if v == "FAIL":
                fs = sorted_findings([f for f in r.findings if f.check == check and f.dtype in (tag, "")])
                head = fs[0].message.splitlines()[0] if fs else f"{check} failed"
                fail = ET.SubElement(tc, "failure", message=_xml(head), type=check)
                fail.text = _xml(_findings_text(fs, root))
                counts["failures"] += 1
            elif v.skipped:
                ET.SubElement(tc, "skipped", message=_xml(v.reason))
                counts["skipped"] += 1
            elif v == "warn":  # passed; the warning is shown, not hidden
                fs = [f for f in r.findings if f.check == check and f.severity == "warning" and f.dtype in (tag, "")]
                ET.SubElement(tc, "system-out").text = _xml("warning:\n" + _findings_text(fs, root))
        if r.verdict == "unchecked":  # values never checked: a skipped test, never a passed one
            tc = _testcase(suite, "values", r.spec.name, where, "value")
            why = "; ".join(r.unchecked_values())
            ET.SubElement(tc, "skipped", message=_xml(f"values not checked: {why}"))
            counts["tests"] += 1
            counts["skipped"] += 1
        if r.error:
            tc = _testcase(suite, "battery", r.spec.name, where, "battery")
            kind = "spec-error" if not r.internal_error else "internal-error"
            err = ET.SubElement(tc, "error", message=_xml(r.error.splitlines()[0]), type=kind)
            err.text = _xml(r.error)
            counts["tests"] += 1
            counts["errors"] += 1
        seconds = round(r.seconds, 3)
        time_total += seconds
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("time", f"{seconds:.3f}")
    for k, v in totals.items():
        top.set(k, str(v))
    top.set("time", f"{time_total:.3f}")
    return top


def render(result) -> str:
    tree = to_element(result)
    ET.indent(tree)
    return ET.tostring(tree, encoding="unicode", xml_declaration=True) + "\n"
