"""The tests a pytest run skipped for lack of an optional package, as node ids to run again.

    pytest --junitxml=run.xml ...; python tools/skipped_for_packages.py run.xml

CI runs the README's `pytest` in a venv with only requirements.txt, then installs the
optional peers and runs again just these (.ci/run): a test whose skip names a missing
package (importorskip's "could not import", or a reason that says what to install), and
every test file skipped whole at collection (a module-level importorskip, which pytest's
report gives no reason for).
"""
import re
import sys
import xml.etree.ElementTree as ET

MISSING = re.compile(r"could not import|no module named|pip install|requirements-|needs? [a-z_]+", re.I)


def node_id(classname: str, name: str) -> str:
    """pytest's node id from JUnit's dotted classname: the folders and the test file
    (tests.engine.test_split) up to the first part named test_*, then any classes."""
    parts = classname.split(".")
    end = next((k + 1 for k, part in enumerate(parts) if part.startswith("test_")), len(parts))
    return "/".join(parts[:end]) + ".py::" + "::".join(parts[end:] + [name])


def main(report: str) -> None:
    for case in ET.parse(report).iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None:
            continue
        classname, name = case.get("classname", ""), case.get("name", "")
        if not classname:  # a whole file skipped at collection: its module's dotted name
            print(name.replace(".", "/") + ".py")
        elif MISSING.search(skipped.get("message", "")):
            print(node_id(classname, name))


if __name__ == "__main__":
    main(sys.argv[1])
