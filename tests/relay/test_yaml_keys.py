"""`duplicate_key` (relay/yaml_keys.py) on composed YAML: nested, in lists, merge keys and aliases."""

from __future__ import annotations

import yaml

from relay.yaml_keys import duplicate_key


def first_duplicate(text: str) -> tuple[str, int, int] | None:
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert node is not None
    return duplicate_key(node)


def test_a_key_twice_anywhere_is_found_with_both_lines() -> None:
    assert first_duplicate("a: 1\nb:\n  - c: 1\n    d: 2\n    c: 3\n") == ("c", 5, 3)
    assert first_duplicate("a: 1\nb: 2\n") is None


def test_merge_keys_and_aliases_are_not_duplicates() -> None:
    text = "base: &b {x: 1}\none:\n  <<: *b\n  <<: *b\n  y: 2\ntwo: *b\n"
    assert first_duplicate(text) is None
