"""T0's tasks and mixtures: the counts, names and rates of t-zero at promptsource 0.1.0."""

from __future__ import annotations

import pytest

from p3data import t0
from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog
from p3data.templates import TemplateCollection


@pytest.fixture(scope="module")
def definitions() -> t0.T0Definitions:
    return t0.define(Catalog.load(), TemplateCollection.default())


def test_task_count(definitions):
    score_eval = [n for n in definitions.tasks if n.endswith("_score_eval")]
    assert len(definitions.tasks) == 983  # T0's 971 and winogrande_debiased's 12
    assert len(score_eval) == 385


@pytest.mark.parametrize("mixture, size", [
    ("t0_train", 313), ("t0+_train", 392), ("t0++_train", 464), ("t0_eval_score_eval", 116),
    ("t0_train_score_eval", 87), ("t0_train_one_og_prompt", 35),
    ("t0_train_all_og_prompts", 222), ("bias_fairness_eval_score_eval", 16),
])
def test_mixture_sizes(definitions, mixture, size):
    tasks = definitions.mixtures[mixture].tasks
    assert len(tasks) == size and len(set(tasks)) == size


@pytest.mark.parametrize("mixture, total", [
    ("t0_train", 17_277_798), ("t0+_train", 20_672_671), ("t0++_train", 23_118_591)])
def test_training_rates_sum_like_t0(definitions, mixture, total):
    spec = definitions.mixtures[mixture]
    assert sum(spec.rate(definitions.tasks[t]) for t in spec.tasks) == total


@pytest.mark.parametrize("dataset, cap", [
    ("amazon_polarity", 55_555), ("gigaword", 55_555), ("yelp_review_full", 71_428),
    ("wiki_bio", 100_000), ("dbpedia_14", 125_000), ("imdb", 25_000)])
def test_capped_rates(definitions, dataset, cap):
    caps = {s.cap for s in definitions.tasks.values() if s.entry.dataset == dataset}
    assert caps == {cap}


@pytest.mark.parametrize("name", [
    "yelp_review_full_based_on_that",
    "super_glue_copa__As_a_result_C1_or_C2_",
    "dbpedia_14_given_a_choice_of_categories_",
    "cos_e_v1.11_description_question_option_id",
    "cnn_dailymail_3.0.0_2_or_3_sentences",
    "super_glue_wsc.fixed_GPT_3_Style_score_eval",
    "anli_GPT_3_style_r1",
    "anli_GPT_3_style_r1_score_eval",
    "anli_GPT_3_style_r3_score_eval",
    "adversarial_qa_dbert_answer_the_following_q",
])
def test_names_like_t0(definitions, name):
    assert name in definitions.tasks


def test_anli_rounds_map_splits(definitions):
    spec = definitions.tasks["anli_GPT_3_style_r2"]
    assert spec.split_mapping == {"train": "train_r2", "validation": "dev_r2", "test": "test_r2"}


def test_one_original_prompt_per_dataset(definitions):
    expected = {
        "imdb_Movie_Expressed_Sentiment", "cnn_dailymail_3.0.0_2_or_3_sentences",
        "quoref_Answer_Friend_Question", "glue_mrpc_equivalent", "glue_qqp_duplicate",
        "samsum_Generate_a_summary_for_this_dialogue",
        "cos_e_v1.11_description_question_option_id", "wiqa_effect_with_label_answer",
        "dbpedia_14_given_a_choice_of_categories_",
        "adversarial_qa_droberta_answer_the_following_q",
        "adversarial_qa_dbert_answer_the_following_q",
        "adversarial_qa_dbidaf_answer_the_following_q", "common_gen_Example_prompt",
        "dream_baseline", "yelp_review_full_based_on_that",
        "quail_context_description_question_answer_id", "trec_fine_grained_open",
        "ag_news_classify", "wiki_qa_Decide_good_answer",
        "xsum_DOC_boils_down_to_simple_idea_that", "multi_news_distill", "wiki_bio_who",
        "sciq_Direct_Question", "gigaword_TLDR",
        "social_i_qa_Check_if_a_random_answer_is_valid_or_not", "qasc_qa_with_separated_facts_1",
        "quartz_answer_question_based_on", "amazon_polarity_Is_this_product_review_positive",
        "duorc_ParaphraseRC_answer_question", "duorc_SelfRC_answer_question",
        "wiki_hop_original_choose_best_object_affirmative_1",
        "paws_labeled_final_Concatenation", "ropes_background_new_situation_answer",
        "cosmos_qa_context_description_question_answer_id",
        "rotten_tomatoes_Movie_Expressed_Sentiment",
    }
    assert set(definitions.mixtures["t0_train_one_og_prompt"].tasks) == expected


@pytest.mark.parametrize("dataset, subset, count", [
    ("super_glue", "rte", 10), ("super_glue", "cb", 15), ("anli", None, 45),
    ("super_glue", "wsc.fixed", 10), ("winogrande", "winogrande_xl", 5),
    ("story_cloze", "2016", 5), ("hellaswag", None, 4), ("super_glue", "copa", 12),
    ("super_glue", "wic", 10)])
def test_eval_breakdown(definitions, dataset, subset, count):
    tasks = definitions.mixtures["t0_eval_score_eval"].tasks
    key = DatasetKey(dataset, subset)
    assert sum(definitions.tasks[t].entry.key == key for t in tasks) == count


def test_eval_hellaswag_templates(definitions):
    names = {definitions.tasks[t].template.name
             for t in definitions.mixtures["t0_eval_score_eval"].tasks
             if definitions.tasks[t].entry.dataset == "hellaswag"}
    assert names == {"Predict ending with hint", "Randomized prompts template",
                     "complete_first_then", "if_begins_how_continues"}


@pytest.mark.parametrize("dataset, count", [
    ("glue", 10), ("wiki_qa", 5), ("cos_e", 6), ("cosmos_qa", 10), ("qasc", 5), ("quail", 10),
    ("quartz", 8), ("sciq", 4), ("social_i_qa", 5), ("rotten_tomatoes", 10),
    ("yelp_review_full", 7), ("ag_news", 7), ("wiki_hop", 0), ("amazon_polarity", 0)])
def test_train_score_eval_breakdown(definitions, dataset, count):
    tasks = definitions.mixtures["t0_train_score_eval"].tasks
    assert sum(definitions.tasks[t].entry.dataset == dataset for t in tasks) == count


def test_score_eval_twins_only_for_answer_choices(definitions):
    for name, spec in definitions.tasks.items():
        if spec.score_eval:
            assert spec.template.answer_choices and spec.base_name in definitions.tasks
        else:
            assert (name + "_score_eval" in definitions.tasks) == bool(spec.template.answer_choices)


def test_eval_and_bias_mixtures_hold_only_twins(definitions):
    for mixture in ("t0_eval_score_eval", "t0_train_score_eval", "bias_fairness_eval_score_eval"):
        assert all(definitions.tasks[t].score_eval for t in definitions.mixtures[mixture].tasks)
    for mixture in ("t0_train", "t0+_train", "t0++_train"):
        assert not any(definitions.tasks[t].score_eval
                       for t in definitions.mixtures[mixture].tasks)
