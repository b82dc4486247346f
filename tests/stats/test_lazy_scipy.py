"""scipy takes seconds to import: a `niceeval run` never imports it, whatever its reports show."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_run_with_intervals_in_every_report_does_not_import_scipy(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "e.py").write_text(
        "from niceeval import define_eval\n"
        "from niceeval.expect import equals\n"
        "@define_eval(cases=[{'q': i} for i in range(4)])\n"
        "def e(t):\n"
        "    t.check(t.case['q'] % 2, equals(1))\n"
    )
    code = (
        "import sys\n"
        "from niceeval.cli import main\n"
        "code = main(['run', '--no-store', '--runs', '3', '--json', 'r.json', '--junit', 'r.xml'])\n"
        "print('scipy' in sys.modules, 'numpy' in sys.modules, code, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "95% CI" in done.stdout
    assert done.stderr.split()[-3:] == ["False", "False", "1"], done.stderr
