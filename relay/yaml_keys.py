"""A key given twice in one YAML mapping: PyYAML keeps the last value without a word, kubectl refuses the file
("mapping key "metadata" already defined at line N", sigs.k8s.io/yaml's strict decoding). A config file or manifest
with a duplicated key means something other than what one of its two places says, so both readers refuse it."""

from __future__ import annotations

import yaml

MERGE_KEY = "<<"  # YAML's merge key may repeat


def duplicate_key(node: yaml.Node) -> tuple[str, int, int] | None:
    """The first key a mapping under `node` defines twice, as (key, its second line, its first line), 1-based;
    None. Iterative: the node's size is bounded by whoever composed it."""
    pending = [node]
    seen_nodes: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen_nodes:  # an alias names the same node again
            continue
        seen_nodes.add(id(current))
        if isinstance(current, yaml.MappingNode):
            first: dict[str, int] = {}
            for key_node, value_node in current.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value != MERGE_KEY:
                    line = key_node.start_mark.line + 1
                    if key_node.value in first:
                        return key_node.value, line, first[key_node.value]
                    first[key_node.value] = line
                pending.append(value_node)
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)
    return None
