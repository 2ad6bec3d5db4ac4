"""The analyser: the terms that the index and every query are made of."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscript.memory.text import (
    DEFAULT_ANALYZER,
    Analyzer,
    normalise,
    normalise_title,
    porter_stem,
)


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("cats", "cat"),
        ("feed", "feed"),
        ("agreed", "agre"),
        ("plastered", "plaster"),
        ("motoring", "motor"),
        ("sing", "sing"),
        ("hopping", "hop"),
        ("falling", "fall"),
        ("filing", "file"),
        ("happy", "happi"),
        ("relational", "relat"),
        ("generalization", "gener"),
        ("adoption", "adopt"),
        ("controll", "control"),
        ("painting", "paint"),
        ("painted", "paint"),
        ("paints", "paint"),
    ],
)
def test_porter_stemmer_matches_the_published_examples(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_terms_fold_case_drop_stopwords_and_apostrophes() -> None:
    assert DEFAULT_ANALYZER.terms("What did Caroline's FRIENDS research?") == [
        "carolin",
        "friend",
        "research",
    ]


def test_question_words_are_stopwords() -> None:
    assert DEFAULT_ANALYZER.terms("When, where, who, why and how did it happen?") == ["happen"]


def test_irregular_forms_meet_their_lemma() -> None:
    analyzer = DEFAULT_ANALYZER
    assert analyzer.terms("went") == analyzer.terms("go")
    assert analyzer.terms("children") == analyzer.terms("child")
    assert analyzer.terms("bought") == analyzer.terms("buying")


def test_hyphenated_compounds_are_indexed_joined_too() -> None:
    assert DEFAULT_ANALYZER.terms("de-stress") == ["de", "stress", "destress"]
    assert set(DEFAULT_ANALYZER.terms("destress")) <= set(DEFAULT_ANALYZER.terms("de-stress"))


def test_full_width_text_and_ligatures_compare_equal() -> None:
    assert DEFAULT_ANALYZER.terms("Ｄｅｐｌｏｙ ﬁle") == DEFAULT_ANALYZER.terms("deploy file")


def test_chinese_is_cut_into_bigrams_around_function_words() -> None:
    assert DEFAULT_ANALYZER.terms("他们喜欢什么运动") == ["喜欢", "运动"]
    assert DEFAULT_ANALYZER.terms("我的朋友") == ["朋友"]
    assert DEFAULT_ANALYZER.terms("中文查询") == ["中文", "文查", "查询"]


def test_a_lone_cjk_character_is_a_term() -> None:
    assert DEFAULT_ANALYZER.terms("猫 cat") == ["猫", "cat"]


def test_words_in_mixed_scripts_are_split_between_the_scripts() -> None:
    assert DEFAULT_ANALYZER.terms("用Python写脚本") == ["用", "python", "写脚", "脚本"]


def test_query_syntax_becomes_plain_terms() -> None:
    terms = DEFAULT_ANALYZER.terms('title:"x" OR NEAR(a b) AND NOT c* ^d -e {body}: (f)')
    assert all(term.isalnum() for term in terms)
    assert "near" in terms and "titl" in terms


def test_unique_terms_keep_first_appearance_order() -> None:
    assert DEFAULT_ANALYZER.unique_terms("deploy tests deploy tested") == ["deploi", "test"]


def test_overlong_tokens_are_not_terms() -> None:
    assert DEFAULT_ANALYZER.terms("x" * 65 + " ok") == ["ok"]


def test_options_change_the_signature() -> None:
    signatures = {
        Analyzer().signature,
        Analyzer(stem=False).signature,
        Analyzer(stopwords=False).signature,
        Analyzer(cjk_bigrams=False).signature,
        Analyzer(lemmas=False).signature,
        Analyzer(compounds=False).signature,
    }
    assert len(signatures) == 6


def test_titles_are_normalised_for_merging() -> None:
    assert normalise_title("  Deploy   WITH make\trelease ") == "deploy with make release"


@given(
    st.lists(
        st.text(alphabet=st.sampled_from(list("ab-c' Dé\u0301ﬁ中文的了 9\r\t")), max_size=12),
        max_size=4,
    )
)
def test_a_text_has_the_terms_its_lines_have(lines: list[str]) -> None:
    """Terms are remembered line by line; the whole text, analysed at once, agrees."""
    text = "\n".join(lines)
    assert DEFAULT_ANALYZER.terms(text) == DEFAULT_ANALYZER.analyse(text)


# One token of FTS5's `ascii` tokenizer: ASCII letters and digits and every non-ASCII
# character make tokens, every other ASCII character separates them, and A-Z fold to a-z.
_ONE_FTS5_TOKEN = re.compile(r"[0-9a-z\x80-\U0010ffff]+")
_ANALYZERS = (
    DEFAULT_ANALYZER,
    Analyzer(stem=False, stopwords=False, cjk_bigrams=False, lemmas=False, compounds=False),
)


@given(st.text())
def test_every_term_is_one_fts5_token(text: str) -> None:
    """What the index counts as tokens (store.postings) are the terms themselves: each is one
    token of FTS5's tokenizer, as the SQLite store counted lengths when it used FTS5."""
    for analyzer in _ANALYZERS:
        for term in analyzer.analyse(text):
            assert _ONE_FTS5_TOKEN.fullmatch(term), (text, term)


def test_no_character_makes_a_term_of_several_fts5_tokens() -> None:
    """Every code point the analyser folds into ASCII (the only way a term could hold an
    ASCII separator), alone and inside words, for the property above."""
    folded = [
        character
        for character in map(chr, [*range(0xD800), *range(0xE000, 0x110000)])
        if re.search(r"[\x00-\x7f]", normalise(character))
    ]
    assert len(folded) > 128
    text = " ".join(f"{c} x{c}y" for c in folded)
    for analyzer in _ANALYZERS:
        assert all(map(_ONE_FTS5_TOKEN.fullmatch, analyzer.analyse(text)))


@given(st.lists(st.text(alphabet="ab- \n\u00e9\u4e2d\u6587Ab", max_size=30), max_size=5))
def test_discard_terms_removes_exactly_the_terms_of_the_text(texts: list[str]) -> None:
    """Relevance takes a field's terms out of the query's missing ones without their list:
    the same set as removing `terms(text)`, line breaks and compounds included."""
    analyzer = Analyzer()
    query = set(analyzer.terms(" ".join(texts))) | {"ab", "a-b", "abab", "b", "\u4e2d\u6587"}
    for text in texts:
        expected = query - set(analyzer.terms(text))
        analyzer.discard_terms(query, text)
        assert query == expected
