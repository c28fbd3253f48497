"""The JSON array reader, checked on many generated answers: arrays of random elements rendered in
several styles, wrapped in prose with brackets and code fences, mixed with elements that are not
JSON, and cut at every position."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.models import JsonArrayRead, continuation_prompt, read_json_array

TRICKY = ["[", "]", "{", "}", ",", '"', "\\", "\\n", "[3]", "],[", '"}', "'", "ü", "日本", "```", ": ", "\t"]
PREFIXES = [
    "",
    "Here are the items:\n",
    "Message [3] and [12] hold them:\n",
    "Sure! (see [note] below) ",
    "```json\n",
    "Result [partial]:\n```\n",
    "I found these [\n",  # an unclosed bracket of prose
    'He said "don\'t [quote] me":\n',
]
SUFFIXES = ["", "\n```", "\n\nLet me know [if] you need more.", "\n```\nThat is all [done]."]
GARBAGE = ["{'single': 'quotes'}", "undefined", '{"a": 1,}', "NaN", "True", '{"k" "v"}', "[1 2]", "-"]


def text_value(rng: random.Random) -> str:
    return "".join(rng.choice([*TRICKY, "word", " ", "x"]) for _ in range(rng.randint(0, 6)))


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["str", "int", "float", "bool", "null", "list", "obj"] if depth < 2 else ["str", "int", "null"])
    if kind == "str":
        return text_value(rng)
    if kind == "int":
        return rng.randint(-1000, 100000)
    if kind == "float":
        return round(rng.uniform(-10, 10), 3)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return obj(rng, depth + 1)


def obj(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    return {text_value(rng) or "k": value(rng, depth) for _ in range(rng.randint(1, 4))}


def render(elements: list[str], rng: random.Random) -> tuple[str, list[int]]:
    """The array text of already rendered elements, and where each element ends in it."""
    sep = rng.choice([", ", ",", ",\n  ", " ,\n"])
    out = "[" + rng.choice(["", "\n  ", " "])
    ends = []
    for i, element in enumerate(elements):
        if i:
            out += sep
        out += element
        ends.append(len(out))
    return out + rng.choice(["", "\n"]) + "]", ends


def dumps(item: Any, rng: random.Random) -> str:
    return json.dumps(item, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, None, 2]))


@pytest.mark.parametrize("seed", range(200))
def test_objects_are_found_past_prose_fences_and_brackets(seed: int) -> None:
    rng = random.Random(seed)
    items = [obj(rng) for _ in range(rng.randint(0, 6))]
    array, _ = render([dumps(i, rng) for i in items], rng)
    text = rng.choice(PREFIXES) + array + rng.choice(SUFFIXES)
    read = read_json_array(text, objects=True)
    assert read == JsonArrayRead(elements=items, complete=True, skipped=0, found=True), text


@pytest.mark.parametrize("seed", range(100))
def test_elements_that_are_not_json_or_not_objects_are_left_out(seed: int) -> None:
    rng = random.Random(1000 + seed)
    rendered: list[str] = []
    kept: list[Any] = []
    bad = 0
    for _ in range(rng.randint(1, 8)):
        if rng.random() < 0.35:
            rendered.append(rng.choice(GARBAGE))
            bad += 1
        elif rng.random() < 0.2:
            scalar = rng.choice([7, "text [with] brackets", None, [1, 2]])
            rendered.append(json.dumps(scalar))
            bad += 1
        else:
            item = obj(rng)
            rendered.append(dumps(item, rng))
            kept.append(item)
    array, _ = render(rendered, rng)
    text = rng.choice(PREFIXES[:6]) + array + rng.choice(SUFFIXES)
    read = read_json_array(text, objects=True)
    if kept:
        assert (read.elements, read.skipped, read.complete, read.found) == (kept, bad, True, True), text
    else:
        assert read.elements == [] and not (read.found and read.skipped == 0), text


@pytest.mark.parametrize("seed", range(40))
def test_a_cut_array_keeps_exactly_the_elements_finished_before_the_cut(seed: int) -> None:
    rng = random.Random(2000 + seed)
    items = [obj(rng) for _ in range(rng.randint(1, 5))]
    array, ends = render([dumps(i, rng) for i in items], rng)
    prefix = rng.choice(["", "Here:\n```json\n", "Message [3] says:\n"])
    whole = prefix + array
    for cut in range(len(prefix) + 1, len(whole)):
        read = read_json_array(whole[:cut], objects=True)
        finished = sum(1 for end in ends if len(prefix) + end <= cut)
        assert read.elements == items[:finished], (cut, whole[:cut])
        assert not read.complete and read.skipped == 0
        # Found once the first element has opened: a cut inside it is a cut array of nothing yet.
        assert read.found == (cut > whole.index("{", len(prefix))) == read.cut, (cut, whole[:cut])
    assert read_json_array(whole, objects=True).complete


@pytest.mark.parametrize("seed", range(40))
def test_a_cut_array_of_any_values_keeps_only_what_cannot_grow(seed: int) -> None:
    rng = random.Random(3000 + seed)
    items = [value(rng) for _ in range(rng.randint(1, 6))]
    array, ends = render([json.dumps(i) for i in items], rng)
    for cut in range(1, len(array)):
        read = read_json_array(array[:cut])
        expected = 0
        for i, end in enumerate(ends):
            closed_by_comma = i + 1 < len(items) and array.index(",", end) < cut
            closes_itself = end <= cut and isinstance(items[i], dict | list | str)
            if closed_by_comma or closes_itself:
                expected = i + 1
        assert read.elements == items[:expected], (cut, array[:cut])
        assert not read.complete
    assert read_json_array(array).elements == items


def test_examples_of_what_models_write() -> None:
    fenced = 'Sure, here you go:\n```json\n[\n  {"fact": "likes [tea]"},\n  {"fact": "a \\"quoted\\" name"}\n]\n```'
    assert read_json_array(fenced, objects=True).elements == [{"fact": "likes [tea]"}, {"fact": 'a "quoted" name'}]
    numbered = 'From message [3] and [4]: [{"a": 1}]'
    assert read_json_array(numbered, objects=True).elements == [{"a": 1}]
    assert read_json_array(numbered).elements == [{"a": 1}]  # the longer array wins a tie
    wrapped = '{"items": [{"a": 1}, {"b": [1, [2]]}], "count": 2}'
    assert read_json_array(wrapped, objects=True).elements == [{"a": 1}, {"b": [1, [2]]}]
    two = 'Example: [{"x": 0}]. Answer: [{"a": 1}, {"b": 2}]'
    assert read_json_array(two, objects=True).elements == [{"a": 1}, {"b": 2}]
    assert read_json_array("[]") == JsonArrayRead(elements=[], complete=True, skipped=0, found=True)
    assert read_json_array("Nothing [to see] here, sorry.") == JsonArrayRead()
    assert read_json_array("[3]", objects=True) == JsonArrayRead()
    assert read_json_array('[{"a": 1},]').elements == [{"a": 1}]  # a trailing comma is not an element
    assert read_json_array('[{"a": 1}, {"b": 2}\n\nThat was all.', objects=True).elements == [{"a": 1}, {"b": 2}]
    assert read_json_array('[{"t": "line one\nline two"}]').elements == [{"t": "line one\nline two"}]
    assert read_json_array("[NaN, Infinity, 1]") == JsonArrayRead(elements=[1], complete=True, skipped=2, found=True)
    first_cut = read_json_array('Items:\n[ {"]{": []', objects=True)  # not the "[]" inside the cut element
    assert (first_cut.elements, first_cut.found, first_cut.complete, first_cut.cut) == ([], True, False, True)
    cut_string = '[{"a": 1}, {"quote": "she said \\"wait, ]'
    read = read_json_array(cut_string, objects=True)
    assert (read.elements, read.complete, read.cut) == ([{"a": 1}], False, True)
    with pytest.raises(InvalidArgumentError, match="'text'"):
        read_json_array(b"[1]")  # type: ignore[arg-type]


def test_continuation_prompt_and_then() -> None:
    first = read_json_array('[{"fact": "one"}, {"fact": "two"}, {"fact": "thr')
    prompt = continuation_prompt(first, noun="item")
    assert "after 2 items" in prompt and "after item 2" in prompt and '{"fact": "two"}' in prompt
    assert "[]" in prompt
    single = continuation_prompt(read_json_array('[{"fact": "ünï"}, {'), noun="fact", plural="facts")
    assert "after 1 fact of" in single and '{"fact": "ünï"}' in single
    nothing = continuation_prompt(read_json_array('[{"fact": "on'))
    assert "before its first element was complete" in nothing
    huge = continuation_prompt(read_json_array(json.dumps([{"text": "x" * 5000}])[:-1]))
    assert len(huge) < 1500 and huge.count("x") >= 990
    rest = read_json_array('Continuing:\n[{"fact": "three"}, bad, {"fact": "four"}]')
    joined = first.then(rest)
    assert joined.elements == [{"fact": "one"}, {"fact": "two"}, {"fact": "three"}, {"fact": "four"}]
    assert (joined.complete, joined.skipped, joined.found) == (True, 1, True)
    with pytest.raises(InvalidArgumentError, match="'noun'"):
        continuation_prompt(first, noun=" ")
