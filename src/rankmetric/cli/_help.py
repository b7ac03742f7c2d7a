"""The help of ``rankmetric fit METHOD``'s options, read from the estimators' docstrings.

Each option is a parameter of the estimator; its help is the first sentence of the parameter's
numpydoc description, Sphinx markup turned into plain text, and its ``type=`` reads a value as
the type of the parameter's default.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re

__all__ = ["parameter_help", "parse_value", "summary"]


def parse_value(text: str, default):
    """Convert a command-line string to the type of the parameter's default."""
    lowered = text.lower()
    if lowered in ("none", "null"):
        return None
    if isinstance(default, bool):
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")
    if isinstance(default, (tuple, list)):
        return tuple(json.loads(f"[{text}]"))
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.startswith(("[", "{")):
        return json.loads(text)
    return text


def summary(cls) -> str:
    doc = inspect.getdoc(cls) or ""
    return _plain(doc.split("\n\n")[0].replace("\n", " "))


def parameter_help(cls) -> dict[str, str]:
    """One line of help per parameter, from the numpydoc docstrings of ``cls`` and its bases.

    The first sentence of the parameter's description, Sphinx markup removed, followed by its
    choices when the type line lists them (``{"a", "b"}``); a parameter described only as
    ``As <base class>`` takes its base class's help, one without a description its type line.
    """
    helps: dict[str, str] = {}
    for klass in reversed([k for k in cls.__mro__ if k is not object]):
        for name, (kind, text) in _numpydoc_parameters(klass).items():
            line = _first_sentence(_plain(text))
            if line.startswith("As ") and name in helps:
                continue  # "As SPDNetEmbedding": keep the base class's help
            choices = re.search(r"\{([^}]*)\}", kind)
            if choices and not line.startswith(("As ", "See ")):
                names = ", ".join(c.strip().strip("'\"") for c in choices.group(1).split(","))
                line = f"{line}; one of {names}" if line else f"one of {names}"
            helps[name] = line or _plain(kind)
    return helps


def _numpydoc_parameters(cls) -> dict[str, tuple[str, str]]:
    """``{name: (type line, description)}`` of the Parameters section of ``cls``'s own docstring.

    Understands grouped names (``a, b : float``) and name lists running over several lines.
    """
    doc = inspect.cleandoc(cls.__doc__ or "") + "\n"
    section = re.search(r"^Parameters\n-+\n(.*?)(?=^\S[^\n]*\n-+\n|\Z)", doc, re.M | re.S)
    if section is None:
        return {}
    body = re.sub(r"^(\S[^\n]*,)\n(?=\S)", r"\1 ", section.group(1), flags=re.M)  # name lists
    params: dict[str, tuple[str, str]] = {}
    for header, text in re.findall(r"^(\S[^\n]*)\n((?:[ \t][^\n]*\n|\n)*)", body, re.M):
        names, kind = (re.split(r"\s+:(?:\s+|$)", header.strip(), maxsplit=1) + [""])[:2]
        description = " ".join(line.strip() for line in text.splitlines() if line.strip())
        for name in (n.strip() for n in names.split(",")):
            if name:
                params[name] = (kind, description)
    return params


def _first_sentence(text: str) -> str:
    """Up to the first full stop outside brackets that is not an abbreviation ("et al.")."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(char, 0)
        if char == "." and depth <= 0 and text[i + 1 : i + 2] in ("", " "):
            word = text[:i].rsplit(" ", 1)[-1]
            if word not in ("al", "e.g", "i.e", "cf", "vs", "etc") and not word[-1:].isdigit():
                return text[:i]
    return text.rstrip(".")


#: LaTeX of the docstrings' ``:math:`` roles, as a terminal shows it.
_LATEX_TEXT = {
    r"\lVert": "‖", r"\rVert": "‖", r"\Vert": "‖", r"\top": "ᵀ", r"\cdot": "·",
    r"\epsilon": "ε", r"\lambda": "λ", r"\gamma": "γ", r"\mu": "μ", r"\sigma": "σ",
    r"\Sigma": "Σ", r"\sum": "Σ", r"\chi": "χ", r"\tfrac12": "½", r"\frac12": "½",
    r"\sqrt": "√", r"\exp": "exp", r"\log": "log", r"\le": "≤", r"\ge": "≥",
    r"\operatorname": "", r"\mathrm": "", r"\mathtt": "", r"\text": "", r"\,": " ",
}  # fmt: skip


def _math_text(latex: str) -> str:
    r"""A ``:math:`` role's LaTeX as plain text (``\lVert L(a - b) \rVert`` → ``‖L(a - b)‖``)."""
    for macro, text in _LATEX_TEXT.items():
        latex = re.sub(re.escape(macro) + r"(?![A-Za-z])", text, latex)
    latex = latex.replace("\\_", "_").replace("{", "").replace("}", "")
    latex = latex.replace("^ᵀ", "ᵀ").replace("^2", "²")
    return re.sub(r"‖\s+", "‖", re.sub(r"\s+‖", "‖", latex))


def _plain(text: str) -> str:
    """``text`` without Sphinx markup: roles (``:class:`~a.B``` → ``B``), maths as plain text,
    literals, backticks."""
    text = re.sub(r":math:`([^`]*)`", lambda m: _math_text(m.group(1)), text)
    text = re.sub(r":\w+:`~?([^`<]*?)\s*<[^`>]*>`", r"\1", text)  # :role:`title <target>`
    text = re.sub(r":\w+:`~([^`]*)`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    text = re.sub(r":\w+:`([^`]*)`", r"\1", text)
    return text.replace("``", "").replace("`", "")
