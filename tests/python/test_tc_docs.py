"""Every ```python block of docs/tc.md runs and its assertions hold."""
import os
import re

import pytest

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "tc.md")


def _blocks():
    with open(DOC) as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_doc_has_examples():
    assert len(_blocks()) >= 6


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_doc_example(index):
    exec(compile(_blocks()[index], f"docs/tc.md python block {index}", "exec"), {})
