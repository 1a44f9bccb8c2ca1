"""Fitting prompts to the input length with the real sample vocabulary: over-long queries lose
passage text at a word boundary, never their instruction, question or answer choices; every
prompt fits; costs are measured once and exact; nothing is dropped."""

from __future__ import annotations

import pytest
from helpers.fewshot import TaskSplit, catalog, tokens

from p3data.datasets.samples import generate_rows, sample_rows
from p3data.fewshot import FewshotSettings
from p3data.fewshot.shorten import cut_text, cut_value, passage_fields
from p3data.templates.render import Rendered

WIKI_HOP = ("wiki_hop", "original")
WIKI_HOP_ROWS = {split: sample_rows(catalog().get(*WIKI_HOP).key, split)
                 for split in ("train", "validation")}
# The samples' supports are short: each row's are followed by every other sample row's, which
# makes real passages of ~30 paragraphs (~4,000 characters), as long as wiki_hop's often are.
ALL_SUPPORTS = [s for rows in WIKI_HOP_ROWS.values() for row in rows for s in row["supports"]]
LONG_WIKI_HOP = [{**row, "supports": row["supports"] + [s for s in ALL_SUPPORTS
                                                         if s not in row["supports"]]}
                 for row in WIKI_HOP_ROWS["validation"]]


def short(length: int, **kwargs) -> FewshotSettings:
    return FewshotSettings(input_length=length, label=f"len{length}", **kwargs)


def test_cut_text_keeps_whole_words_within_the_limit():
    text = "The quick  brown fox\njumps over"
    assert cut_text(text, 100) == text
    assert cut_text(text, 15) == "The quick"  # "brown" would end at 16
    assert cut_text(text, 16) == "The quick  brown"
    assert cut_text(text, 20) == "The quick  brown fox"
    assert cut_text(text, 2) == ""
    assert cut_text("unbroken", 3) == ""
    assert cut_value(["one two", "three four", "five"], 12) == ["one two", "three"]
    assert cut_value(["one two", "three four"], 3) == ["one"]
    assert cut_value(["one two", "three four"], 0) == []


@pytest.mark.parametrize("template", [
    "choose_best_object_interrogative_1", "choose_best_object_affirmative_2", "generate_object",
    "explain_relation"])
def test_an_over_long_wiki_hop_query_keeps_its_question_and_choices(template):
    task = TaskSplit(*WIKI_HOP, template, "validation", LONG_WIKI_HOP, WIKI_HOP_ROWS["train"],
                     short(256))
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    queries = task.queries()
    fitted = unfit = 0
    for (row, query), zero in zip(queries, examples[0], strict=True):
        before, after = tokens(task.tokenizer, query.inputs), tokens(task.tokenizer, zero.inputs)
        assert (zero.targets, zero.answer_choices) == (query.targets, query.answer_choices)
        if before <= 256 or after > 256:  # fits as it is, or not even with its passage emptied
            assert zero.inputs == query.inputs
            unfit += before > 256
            continue
        fitted += 1
        for choice in query.answer_choices or ():
            assert choice in zero.inputs  # the choices survive, each of them
        subject = " ".join(row["question"].split(" ")[1:])
        assert subject in zero.inputs  # so does the question
        # only the passage is shorter: what follows the supports is unchanged
        tail = query.inputs[query.inputs.rindex(row["supports"][-1]) + len(row["supports"][-1]):]
        assert zero.inputs.endswith(tail)
    stats = prompter.stats[0]
    assert (fitted, unfit) == (len(queries), 0)  # every query is long, and each fits
    assert (stats.fitted, stats.unfit) == (fitted, unfit)
    assert stats.cut_tokens == sum(
        tokens(task.tokenizer, q.inputs) - tokens(task.tokenizer, z.inputs)
        for (_, q), z in zip(queries, examples[0], strict=True))
    assert stats.examples == len(queries)


def test_long_quoref_passages_fit_at_a_word_boundary_and_the_question_survives():
    entry = catalog().get("quoref")
    rows = list(generate_rows(entry, "validation", 30, seed=4))
    task = TaskSplit("quoref", None, "Answer Question Given Context", "validation", rows,
                     list(generate_rows(entry, "train", 30, seed=5)), short(300))
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    assert prompter.stats[0].fitted > 10  # generated passages run ~2,000 characters
    for (row, query), zero, five in zip(task.queries(), examples[0], examples[5], strict=True):
        assert tokens(task.tokenizer, zero.inputs) <= 300
        assert tokens(task.tokenizer, five.inputs) <= 300
        assert row["question"] in zero.inputs
        if zero.inputs != query.inputs:
            assert set(zero.inputs.split()) <= set(query.inputs.split())  # no word cut in two
            assert five.num_shots == 0  # a fitted query fills the length
    assert prompter.stats[5].no_room == prompter.stats[5].examples - prompter.stats[5].shots[5]


def test_fields_that_feed_the_answer_choices_are_never_cut():
    key = catalog().get("story_cloze", "2016").key
    rows = sample_rows(key, "validation")
    for row in rows:  # a long first sentence, and an ending past the length of a question
        row["input_sentence_1"] = " ".join([row["input_sentence_1"]] * 30)
        row["sentence_quiz1"] = " ".join([row["sentence_quiz1"]] * 12)
    task = TaskSplit("story_cloze", "2016", "Answer Given options", "validation", rows, rows,
                     short(256))
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    assert prompter.stats[0].fitted == 10
    for (row, query), zero in zip(task.queries(), examples[0], strict=True):
        assert zero.answer_choices == query.answer_choices
        assert row["sentence_quiz1"] in zero.inputs and row["sentence_quiz2"] in zero.inputs
        assert tokens(task.tokenizer, zero.inputs) <= 256
        assert len(row["sentence_quiz1"]) > 256


def test_a_query_over_the_length_even_shortened_is_kept_whole_and_counted():
    rows = sample_rows(catalog().get("super_glue", "record").key, "train")
    task = TaskSplit("super_glue", "record", "GPT-3 style (continuation choices)", "train", rows,
                     settings=short(64))
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    queries = task.queries()
    assert len(examples[3]) == len(queries)
    unfit = [q for _, q in queries if tokens(task.tokenizer, q.inputs) > 64]
    assert unfit and prompter.stats[3].unfit == len(unfit) == prompter.stats[0].unfit
    assert prompter.stats[3].no_room >= len(unfit)


def test_passage_fields_are_the_catalogs_long_text_fields_the_template_reads():
    entry = catalog().get(*WIKI_HOP)
    task = TaskSplit(*WIKI_HOP, "generate_object", "validation", WIKI_HOP_ROWS["validation"])
    row = WIKI_HOP_ROWS["validation"][0]
    assert passage_fields(row, task.compiled, entry.text_lengths) == ["supports", "question"]
    # without the catalog's list: every text field the template reads (not `id`, `candidates`)
    assert passage_fields(row, task.compiled) == ["question", "answer", "supports"]


@pytest.mark.parametrize("separator", ["|", "\nQ:"])
def test_with_separators_that_join_words_every_prompt_still_fits(separator):
    rows = sample_rows(catalog().get("super_glue", "rte").key, "validation")
    pool_rows = sample_rows(catalog().get("super_glue", "rte").key, "train")
    task = TaskSplit("super_glue", "rte", "GPT-3 style", "validation", rows, pool_rows,
                     short(160, example_separator=separator, exemplar_separator="=>"))
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    for k, batch in examples.items():
        for example in batch:
            assert tokens(task.tokenizer, example.inputs) <= 160
            assert example.inputs.count(separator) >= example.num_shots
            assert example.input_ids.varints == task.tokenizer.encode_packed(
                [example.inputs])[0].varints
        assert prompter.stats[k].examples == len(rows)
    assert max(e.num_shots for e in examples[5]) >= 1


def test_pool_costs_are_measured_once_per_template():
    task = TaskSplit("super_glue", "rte", "GPT-3 style", "train",
                     sample_rows(catalog().get("super_glue", "rte").key, "train"))
    pool = task.pool()
    calls = []
    real = task.tokenizer.encode_packed

    def counting(texts):
        calls.append(len(texts))
        return real(texts)

    task.tokenizer.encode_packed = counting
    try:
        prompter = task.prompter(pool=pool)
        prompter.prompts(task.queries())
    finally:
        del task.tokenizer.encode_packed
    # one call measures the queries; the prompts' ids are joined from the pool's and the
    # queries': nothing is tokenized again
    assert calls == [10]
    assert all(isinstance(o, Rendered) for o in task.renders(task.rows))
