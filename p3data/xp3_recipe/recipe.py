"""xP3's recipe as data: the datasets and configs it trains on, in its order, where each
config's prompts come from, and the evaluation sets it holds out.

Facts read from `bigscience-workshop/bigscience@aa872e7` `data/xp3/prepare_xp3_train.py`
(2022-11-04, the version xmtf's README links): 2,357 entries, 2,353 unique configs. The `mlqa`
block keeps the recipe's copy-paste slip on purpose: its `en` row lists `mlqa.en.ar` then
`mlqa.es.{vi,zh,es,hi}`, so `mlqa.en.{vi,zh,es,hi}` are never built and four `es` configs come
twice (the second run finds its files written and skips them).
"""

from __future__ import annotations

from itertools import permutations

from p3data.xp3_recipe.languages import ds_to_lang

Config = tuple[str, str | None]  # (dataset, config); None where the dataset has no configs

# P3's English training sets the recipe keeps (plus super_glue/wic, listed later)
_ENGLISH = [
    ("glue", "mrpc"), ("glue", "qqp"), ("paws", "labeled_final"), ("ai2_arc", "ARC-Challenge"),
    ("ai2_arc", "ARC-Easy"), ("kilt_tasks", "hotpotqa"), ("trivia_qa", "unfiltered"),
    ("web_questions", None), ("wiki_qa", None), ("adversarial_qa", "dbidaf"),
    ("adversarial_qa", "dbert"), ("adversarial_qa", "droberta"), ("duorc", "SelfRC"),
    ("duorc", "ParaphraseRC"), ("ropes", None), ("squad_v2", None), ("super_glue", "record"),
    ("quoref", None), ("cos_e", "v1.11"), ("cosmos_qa", None), ("dream", None),
    ("openbookqa", "main"), ("qasc", None), ("quail", None), ("quarel", None), ("quartz", None),
    ("race", "high"), ("race", "middle"), ("sciq", None), ("social_i_qa", None),
    ("super_glue", "boolq"), ("super_glue", "multirc"), ("wiki_hop", "original"), ("wiqa", None),
    ("piqa", None), ("amazon_polarity", None), ("app_reviews", None), ("imdb", None),
    ("rotten_tomatoes", None), ("yelp_review_full", None), ("common_gen", None),
    ("wiki_bio", None), ("cnn_dailymail", "3.0.0"), ("gigaword", None), ("multi_news", None),
    ("samsum", None), ("xsum", None), ("ag_news", None), ("dbpedia_14", None), ("trec", None),
]

WIKILINGUA_LANGUAGES = ["ar", "en", "es", "fr", "hi", "id", "pt", "vi", "zh"]

TATOEBA_PAIRS = [
    "ara-eng", "ara-fra", "ara-spa", "ben-eng", "cat-eng", "cat-fra", "cat-por", "cat-spa",
    "eng-cmn_Hans", "eng-cmn_Hant", "eng-eus", "eng-fra", "eng-hin", "eng-ind", "eng-mal",
    "eng-mar", "eng-por", "eng-run", "eng-spa", "eng-swa", "eng-tam", "eng-tel", "eng-urd",
    "eng-vie", "eng-zho", "eus-spa", "fra-cmn_Hans", "fra-cmn_Hant", "fra-ind", "fra-por",
    "fra-run", "fra-spa", "fra-vie", "fra-zho", "hin-urd", "hin-zho", "por-cmn_Hans",
    "por-cmn_Hant", "por-spa", "por-zho", "run-spa", "spa-cmn_Hans", "spa-cmn_Hant", "spa-vie",
    "spa-zho", "vie-cmn_Hans", "vie-zho",
]

# `mlqa.<context>.<question>`, row by row as the recipe lists them, the `en` row's slip kept
_MLQA = [
    "ar.ar", "vi.vi", "zh.zh", "es.es", "en.en", "hi.hi",
    "ar.vi", "ar.zh", "ar.es", "ar.en", "ar.hi",
    "vi.ar", "vi.zh", "vi.es", "vi.en", "vi.hi",
    "zh.ar", "zh.vi", "zh.es", "zh.en", "zh.hi",
    "es.ar", "es.vi", "es.zh", "es.en", "es.hi",
    "en.ar", "es.vi", "es.zh", "es.es", "es.hi",  # the slip: `en.vi`, `en.zh`, ... meant
    "hi.ar", "hi.vi", "hi.zh", "hi.es", "hi.en",
]

_CODE = [
    ("Muennighoff/mbpp", "sanitized"), ("great_code", None),
    ("neural_code_search", "evaluation_dataset"),
    ("codeparrot/codecomplex", "codeparrot--codecomplex"),
    ("codeparrot/github-jupyter-text-code-pairs", None), ("codeparrot/apps", "all"),
    *(("codeparrot/xlcost-text-to-code", f"{language}-program-level")
      for language in ["Python", "C", "C++", "Csharp", "Java", "Javascript", "PHP"]),
    ("teven/code_contests", None), ("teven/code_docstring_corpus", "top_level"),
    ("Fraser/python-state-changes", None),
]

XLSUM_LANGUAGES = [
    "arabic", "bengali", "chinese_simplified", "chinese_traditional", "english", "french",
    "gujarati", "hindi", "igbo", "indonesian", "kirundi", "marathi", "nepali", "portuguese",
    "punjabi", "spanish", "swahili", "tamil", "telugu", "urdu", "vietnamese", "yoruba",
]

_TYDIQA_LANGUAGES = ["arabic", "bengali", "english", "indonesian", "swahili", "telugu"]

# FLORES-200's 204 languages, `<ISO 639-3>_<script>`
FLORES_LANGUAGES = [
    "ace_Arab", "ace_Latn", "acm_Arab", "acq_Arab", "aeb_Arab", "afr_Latn", "ajp_Arab", "aka_Latn",
    "amh_Ethi", "apc_Arab", "arb_Arab", "arb_Latn", "ars_Arab", "ary_Arab", "arz_Arab", "asm_Beng",
    "ast_Latn", "awa_Deva", "ayr_Latn", "azb_Arab", "azj_Latn", "bak_Cyrl", "bam_Latn", "ban_Latn",
    "bel_Cyrl", "bem_Latn", "ben_Beng", "bho_Deva", "bjn_Arab", "bjn_Latn", "bod_Tibt", "bos_Latn",
    "bug_Latn", "bul_Cyrl", "cat_Latn", "ceb_Latn", "ces_Latn", "cjk_Latn", "ckb_Arab", "crh_Latn",
    "cym_Latn", "dan_Latn", "deu_Latn", "dik_Latn", "dyu_Latn", "dzo_Tibt", "ell_Grek", "eng_Latn",
    "epo_Latn", "est_Latn", "eus_Latn", "ewe_Latn", "fao_Latn", "fij_Latn", "fin_Latn", "fon_Latn",
    "fra_Latn", "fur_Latn", "fuv_Latn", "gla_Latn", "gle_Latn", "glg_Latn", "grn_Latn", "guj_Gujr",
    "hat_Latn", "hau_Latn", "heb_Hebr", "hin_Deva", "hne_Deva", "hrv_Latn", "hun_Latn", "hye_Armn",
    "ibo_Latn", "ilo_Latn", "ind_Latn", "isl_Latn", "ita_Latn", "jav_Latn", "jpn_Jpan", "kab_Latn",
    "kac_Latn", "kam_Latn", "kan_Knda", "kas_Arab", "kas_Deva", "kat_Geor", "knc_Arab", "knc_Latn",
    "kaz_Cyrl", "kbp_Latn", "kea_Latn", "khm_Khmr", "kik_Latn", "kin_Latn", "kir_Cyrl", "kmb_Latn",
    "kmr_Latn", "kon_Latn", "kor_Hang", "lao_Laoo", "lij_Latn", "lim_Latn", "lin_Latn", "lit_Latn",
    "lmo_Latn", "ltg_Latn", "ltz_Latn", "lua_Latn", "lug_Latn", "luo_Latn", "lus_Latn", "lvs_Latn",
    "mag_Deva", "mai_Deva", "mal_Mlym", "mar_Deva", "min_Arab", "min_Latn", "mkd_Cyrl", "plt_Latn",
    "mlt_Latn", "mni_Beng", "khk_Cyrl", "mos_Latn", "mri_Latn", "mya_Mymr", "nld_Latn", "nno_Latn",
    "nob_Latn", "npi_Deva", "nso_Latn", "nus_Latn", "nya_Latn", "oci_Latn", "gaz_Latn", "ory_Orya",
    "pag_Latn", "pan_Guru", "pap_Latn", "pes_Arab", "pol_Latn", "por_Latn", "prs_Arab", "pbt_Arab",
    "quy_Latn", "ron_Latn", "run_Latn", "rus_Cyrl", "sag_Latn", "san_Deva", "sat_Olck", "scn_Latn",
    "shn_Mymr", "sin_Sinh", "slk_Latn", "slv_Latn", "smo_Latn", "sna_Latn", "snd_Arab", "som_Latn",
    "sot_Latn", "spa_Latn", "als_Latn", "srd_Latn", "srp_Cyrl", "ssw_Latn", "sun_Latn", "swe_Latn",
    "swh_Latn", "szl_Latn", "tam_Taml", "tat_Cyrl", "tel_Telu", "tgk_Cyrl", "tgl_Latn", "tha_Thai",
    "tir_Ethi", "taq_Latn", "taq_Tfng", "tpi_Latn", "tsn_Latn", "tso_Latn", "tuk_Latn", "tum_Latn",
    "tur_Latn", "twi_Latn", "tzm_Tfng", "uig_Arab", "ukr_Cyrl", "umb_Latn", "urd_Arab", "uzn_Latn",
    "vec_Latn", "vie_Latn", "war_Latn", "wol_Latn", "xho_Latn", "ydd_Hebr", "yor_Latn", "yue_Hant",
    "zho_Hans", "zho_Hant", "zsm_Latn", "zul_Latn",
]

# the 248 language pairs of allenai/wmt22_african, `<l1>-<l2>`
WMT22_PAIRS = [
    "afr-eng", "afr-som", "amh-eng", "amh-fra", "amh-nya", "amh-orm", "amh-sna", "amh-som",
    "amh-ssw", "amh-swh", "amh-tsn", "amh-tso", "amh-umb", "amh-xho", "amh-yor", "amh-zul",
    "eng-fuv", "eng-hau", "eng-ibo", "eng-kam", "eng-kin", "eng-lin", "eng-lug", "eng-luo",
    "eng-nso", "eng-nya", "eng-orm", "eng-sna", "eng-som", "eng-ssw", "eng-swh", "eng-tsn",
    "eng-tso", "eng-umb", "eng-wol", "eng-xho", "eng-yor", "eng-zul", "fra-hau", "fra-ibo",
    "fra-kam", "fra-kin", "fra-lin", "fra-lug", "fra-luo", "fra-nso", "fra-nya", "fra-orm",
    "fra-som", "fra-ssw", "fra-swh", "fra-tsn", "fra-tso", "fra-umb", "fra-wol", "fra-xho",
    "fra-zul", "fuv-hau", "fuv-ibo", "fuv-kam", "fuv-kin", "fuv-lug", "fuv-luo", "fuv-nso",
    "fuv-nya", "fuv-orm", "fuv-sna", "fuv-som", "fuv-ssw", "fuv-swh", "fuv-tsn", "fuv-tso",
    "fuv-umb", "fuv-xho", "fuv-yor", "fuv-zul", "hau-ibo", "hau-kam", "hau-kin", "hau-lug",
    "hau-luo", "hau-nso", "hau-nya", "hau-orm", "hau-sna", "hau-som", "hau-ssw", "hau-swh",
    "hau-tsn", "hau-tso", "hau-umb", "hau-xho", "hau-yor", "hau-zul", "ibo-kam", "ibo-kin",
    "ibo-lug", "ibo-luo", "ibo-nso", "ibo-nya", "ibo-orm", "ibo-sna", "ibo-som", "ibo-ssw",
    "ibo-swh", "ibo-tsn", "ibo-tso", "ibo-umb", "ibo-xho", "ibo-yor", "ibo-zul", "kam-kin",
    "kam-lug", "kam-luo", "kam-nso", "kam-nya", "kam-orm", "kam-sna", "kam-som", "kam-ssw",
    "kam-swh", "kam-tsn", "kam-tso", "kam-umb", "kam-xho", "kam-yor", "kam-zul", "kin-lug",
    "kin-luo", "kin-nso", "kin-nya", "kin-orm", "kin-sna", "kin-som", "kin-ssw", "kin-swh",
    "kin-tsn", "kin-tso", "kin-umb", "kin-xho", "kin-yor", "kin-zul", "lug-luo", "lug-nso",
    "lug-nya", "lug-orm", "lug-sna", "lug-som", "lug-ssw", "lug-swh", "lug-tsn", "lug-tso",
    "lug-umb", "lug-xho", "lug-yor", "lug-zul", "luo-nso", "luo-nya", "luo-orm", "luo-sna",
    "luo-som", "luo-ssw", "luo-swh", "luo-tsn", "luo-tso", "luo-umb", "luo-xho", "luo-yor",
    "luo-zul", "nso-nya", "nso-orm", "nso-sna", "nso-som", "nso-ssw", "nso-swh", "nso-tsn",
    "nso-tso", "nso-umb", "nso-xho", "nso-yor", "nso-zul", "nya-orm", "nya-sna", "nya-som",
    "nya-ssw", "nya-swh", "nya-tsn", "nya-tso", "nya-umb", "nya-xho", "nya-yor", "nya-zul",
    "orm-sna", "orm-som", "orm-ssw", "orm-swh", "orm-tsn", "orm-tso", "orm-umb", "orm-xho",
    "orm-yor", "orm-zul", "sna-som", "sna-ssw", "sna-swh", "sna-tsn", "sna-tso", "sna-umb",
    "sna-xho", "sna-yor", "sna-zul", "som-ssw", "som-swh", "som-tsn", "som-tso", "som-umb",
    "som-wol", "som-xho", "som-yor", "som-zul", "ssw-swh", "ssw-tsn", "ssw-tso", "ssw-umb",
    "ssw-xho", "ssw-yor", "ssw-zul", "swh-tsn", "swh-tso", "swh-umb", "swh-xho", "swh-yor",
    "swh-zul", "tsn-tso", "tsn-umb", "tsn-xho", "tsn-yor", "tsn-zul", "tso-umb", "tso-xho",
    "tso-yor", "tso-zul", "umb-xho", "umb-yor", "umb-zul", "xho-yor", "xho-zul", "yor-zul",
]


def flores_configs() -> list[str]:
    """Every ordered pair of FLORES languages whose ISO 639-3 part BLOOM knows: 45 languages
    (Chinese twice, `zho_Hans` and `zho_Hant`), 1,980 configs `<l1>-<l2>`."""
    known = ds_to_lang()
    kept = [code for code in FLORES_LANGUAGES if code.split("_")[0] in known]
    return [f"{l1}-{l2}" for l1, l2 in permutations(kept, 2)]


def wmt22_configs() -> list[str]:
    """The wmt22 pairs whose two languages BLOOM knows: 92 of 248."""
    known = ds_to_lang()
    return [pair for pair in WMT22_PAIRS if all(code in known for code in pair.split("-"))]


def train_datasets() -> list[Config]:
    """The recipe's TRAIN_DATASETS in its order, duplicates included (2,357 entries)."""
    return [
        *_ENGLISH,
        *(("GEM/wiki_lingua", language) for language in WIKILINGUA_LANGUAGES),
        *(("Helsinki-NLP/tatoeba_mt", pair) for pair in TATOEBA_PAIRS),
        *(("xquad", f"xquad.{language}") for language in ["ar", "zh", "vi", "en", "es", "hi"]),
        *(("mlqa", f"mlqa.{pair}") for pair in _MLQA),
        *(("paws-x", language) for language in ["en", "es", "fr", "zh"]),
        *((f"khalidalt/tydiqa-{kind}", language)
          for kind in ("primary", "goldp") for language in _TYDIQA_LANGUAGES),
        *_CODE,
        *(("clue", config) for config in ["c3", "cmrc2018", "csl", "drcd", "tnews"]),
        ("super_glue", "wic"), ("pasinit/xlwic", "xlwic_en_zh"), ("pasinit/xlwic", "xlwic_fr_fr"),
        *(("GEM/BiSECT", language) for language in ["en", "es", "fr"]),
        *(("GEM/xlsum", language) for language in XLSUM_LANGUAGES),
        *(("GEM/wiki_lingua", f"{l1}_{l2}") for l1, l2 in permutations(WIKILINGUA_LANGUAGES, 2)),
        *(("facebook/flores", config) for config in flores_configs()),
        *(("allenai/wmt22_african", config) for config in wmt22_configs()),
    ]


def unique_train_datasets() -> list[Config]:
    """TRAIN_DATASETS once each, first occurrence first (2,353 configs)."""
    return list(dict.fromkeys(train_datasets()))


# xP3 (English prompts): every config of these datasets reads this config's templates
ENGLISH_PROMPTS = {
    "xcopa": "en", "Muennighoff/xstory_cloze": "en", "Muennighoff/xwinograd": "en",
    "GEM/wiki_lingua": "en_en",  # its prompts use {source,target}_language_name
    "xnli": "en", "paws-x": "en", "mlqa": "mlqa.en.en", "xquad": "xquad.en",
    "khalidalt/tydiqa-primary": "english", "khalidalt/tydiqa-goldp": "english",
    "pasinit/xlwic": "en", "GEM/xlsum": "english", "GEM/BiSECT": "en",
}


def prompt_folder(dataset: str, config: str | None, *, english_prompts: bool) -> str:
    """Where (dataset, config)'s templates are, under the templates folder: `<dataset>`
    without a config, else `<dataset>/<config>`, or with English prompts (xP3) the English
    config of a dataset in ENGLISH_PROMPTS (xP3mt reads each config's own)."""
    if config is None:
        return dataset
    if english_prompts and dataset in ENGLISH_PROMPTS:
        config = ENGLISH_PROMPTS[dataset]
    return f"{dataset}/{config}"


# held out of xP3: BLOOM's languages (L1) and languages unseen in pre-training (L2)
EVAL_DATASETS_L1 = [
    ("winogrande", "winogrande_xl"), ("super_glue", "cb"), ("super_glue", "rte"), ("anli", None),
    ("story_cloze", "2016"),
    *(("Muennighoff/xstory_cloze", language)
      for language in ["ar", "es", "eu", "id", "hi", "te", "sw", "zh"]),
    ("super_glue", "copa"),
    *(("Muennighoff/xwinograd", language) for language in ["en", "fr", "pt", "zh"]),
    *(("xcopa", language) for language in ["id", "ta", "sw", "vi", "zh"]),
    *(("xnli", language) for language in ["ar", "en", "es", "fr", "hi", "sw", "ur", "vi", "zh"]),
]

EVAL_DATASETS_L2 = [
    *(("Muennighoff/xwinograd", language) for language in ("jp", "ru")),
    *(("xcopa", language) for language in ["et", "ht", "it", "qu", "th", "tr"]),
    *(("xnli", language) for language in ["bg", "de", "el", "ru", "th", "tr"]),
]
