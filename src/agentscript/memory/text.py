"""Text analysis for recall: the tokens that both the index and every query are made of.

One analyser turns any text into search terms: Unicode NFKC, case folding, apostrophes dropped
(`Caroline's` → `carolines`), English stopwords and Chinese function words removed, English
words reduced by the Porter stemmer, and runs of CJK characters cut into overlapping bigrams
(Chinese and Japanese are written without spaces, so bigrams are the standard lexical unit).
Stores index the analysed terms, not the raw text, so ranking never depends on a database's
own tokenizer and the same query finds the same entries in SQLite and PostgreSQL. Terms only
ever contain letters and digits (after folding: a-z, 0-9 and non-ASCII characters): that is
what keeps query syntax inert downstream, and what makes every term one token of FTS5's
`ascii` tokenizer, as store.postings counts them (tests/memory/test_text.py checks both).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

# Hiragana, katakana, CJK ideographs (and extensions), Hangul: scripts written without spaces.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
# Text without any CJK character (most of it) is split by this simpler, faster pattern.
_ANY_CJK = re.compile(rf"[{_CJK}]")
_WORD = re.compile(r"[^\W_]+")
_APOSTROPHES = re.compile(r"['’ʼ`]")

# English function words, plus the words questions are made of (`what`, `when`, `did`):
# a recall query is usually a question, and these say nothing about which memory answers it.
ENGLISH_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each either else
    ever few for from further get gets got had has have having he her here hers herself him
    himself his how i if in into is it its itself just let lets me might more most much must my
    myself no nor not now of off on once only or other our ours ourselves out over own per
    quite rather same shall she should so some such than that thats the their theirs them
    themselves then there these they this those through thus to too under until up upon us
    very was we were what whats when where whether which while who whom whose why will with
    within without would yet you your yours yourself yourselves
    im ive id youre youve youd hes shes weve were theyre theyve dont doesnt didnt isnt arent
    wasnt werent wont wouldnt cant couldnt shouldnt s t d ll m re ve
    """.split()
)

# Chinese function words and question words. A CJK run is split wherever a word of two or more
# characters from this list, or one of the particles below, occurs; a single-character word is
# dropped only when it stands alone (是 and 在 also occur inside content words: 现在, 是否).
CHINESE_STOPWORDS = frozenset(
    """
    的 了 吗 呢 吧 啊 呀 嘛 哦 么 着 过 是 在 和 与 及 或 也 都 就 而 但 又 把 被 给 让 向 从
    对 这 那 哪 你 我 他 她 它 们 之 其 此 某 每 各 有 个
    一个 这个 那个 这些 那些 这里 那里 这是 那是 就是 也是 都是 不是 什么 怎么 怎样 为什么 如何
    哪里 哪个 哪些 是否 是不是 可以 可能 还是 或者 以及 而且 但是 因为 所以 如果 虽然 然后 我们
    你们 他们 她们 它们 自己 这样 那样 已经 一下 一些 有没有 没有 有什么 的话 时候
    """.split()
)
# Particles that never start or end a content word (了 does: 了解).
_CHINESE_PARTICLES = "的吗呢吧啊呀嘛哦"
_CHINESE_SPLIT = re.compile(
    "|".join(sorted((word for word in CHINESE_STOPWORDS if len(word) > 1), key=len, reverse=True))
    + f"|[{_CHINESE_PARTICLES}]"
)

MAX_TERM_CHARS = 64
# Hyphenated compounds (`de-stress`, `e-mail`) are indexed as their parts and joined, so the
# spelling `destress` finds them too.
_COMPOUND = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")

# Light lemmatisation: irregular English forms that suffix stripping cannot reach (`went` is
# `go`, `children` is `child`). Each line is a lemma and its irregular forms.
_IRREGULAR_FORMS = """
    arise arose arisen|awake awoke awoken|bear bore borne|beat beaten|become became|
    begin began begun|bend bent|bet|bite bit bitten|bleed bled|blow blew blown|
    break broke broken|breed bred|bring brought|build built|burn burnt|buy bought|
    catch caught|choose chose chosen|cling clung|come came|cost|creep crept|cut|deal dealt|
    dig dug|draw drew drawn|dream dreamt|drink drank drunk|drive drove driven|eat ate eaten|
    fall fell fallen|feed fed|feel felt|fight fought|find found|flee fled|fly flew flown|
    forbid forbade forbidden|forget forgot forgotten|forgive forgave forgiven|freeze froze frozen|
    give gave given|go went gone|grow grew grown|hang hung|hear heard|
    hide hid hidden|hit|hold held|hurt|keep kept|kneel knelt|know knew known|lay laid|
    lead led|lean leant|leap leapt|learn learnt|leave left|lend lent|lie lain|light lit|
    lose lost|make made|mean meant|meet met|pay paid|prove proven|quit|read|ride rode ridden|
    ring rang rung|rise risen|run ran|say said|see saw seen|seek sought|sell sold|
    send sent|set|sew sewn|shake shook shaken|shine shone|shoot shot|show shown|
    shrink shrank shrunk|shut|sing sang sung|sink sank sunk|sit sat|sleep slept|slide slid|
    speak spoke spoken|speed sped|spend spent|spin spun|split|spread|spring sprang sprung|
    stand stood|steal stole stolen|stick stuck|sting stung|stink stank stunk|strike struck|
    strive strove striven|swear swore sworn|sweep swept|swim swam swum|swing swung|
    take took taken|teach taught|tear tore torn|tell told|think thought|throw threw thrown|
    understand understood|wake woke woken|wear wore worn|weave wove woven|weep wept|win won|
    write wrote written|
    child children|man men|woman women|person people|foot feet|tooth teeth|mouse mice|
    goose geese|ox oxen|wife wives|knife knives|wolf wolves|
    half halves|shelf shelves|thief thieves|loaf loaves
"""
IRREGULAR_LEMMAS: dict[str, str] = {
    form: forms.split()[0] for forms in _IRREGULAR_FORMS.split("|") for form in forms.split()[1:]
}


@dataclass(frozen=True, slots=True)
class Analyzer:
    """How text becomes terms. Changing any option changes `signature`, which stores keep
    beside their index so that an index built by another analyser is rebuilt, never mixed."""

    stem: bool = True
    stopwords: bool = True
    cjk_bigrams: bool = True
    lemmas: bool = True
    compounds: bool = True
    # What this analyser has computed, for the lines and words that recur (`terms`): no part
    # of its identity. Kept on the instance so that a look-up never hashes the analyser (its
    # generated __hash__ is Python code, and every write analyses five fields).
    _lines: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _words: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def signature(self) -> str:
        options = (
            f"v1 stem={self.stem} stop={self.stopwords} cjk={self.cjk_bigrams} "
            f"lemmas={self.lemmas} compounds={self.compounds}"
        )
        return hashlib.sha1(options.encode()).hexdigest()[:12]

    def terms(self, text: str) -> list[str]:
        """The terms of `text`, in order, repeats kept (term frequency matters to BM25);
        joined compounds come last. Remembered line by line for recent lines: a line break
        ends every word, compound and CJK run, so a text's terms are its lines' terms, and a
        turn's body is analysed again as the linked context of the two turns after it
        (store.py), and its first line as its title."""
        if not text:
            return []
        if "\n" not in text:
            words, compounds = self._line(text)
            return [*words, *compounds]
        lines = [self._line(line) for line in text.split("\n")]
        return [term for words, _ in lines for term in words] + [
            term for _, compounds in lines for term in compounds
        ]

    def discard_terms(self, terms: set[str], text: str) -> None:
        """Remove from `terms` every term of `text`: what `terms.difference_update(self.terms(
        text))` does, without building the list of terms (relevance asks this of five fields
        of up to a hundred hits a recall)."""
        if not text:
            return
        for line in text.split("\n") if "\n" in text else (text,):
            words, compounds = self._line(line)
            terms.difference_update(words)
            if compounds:
                terms.difference_update(compounds)

    def _line(self, line: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The terms of the words and of the joined compounds of one line, remembered for
        up to _MOST_LINES lines of at most _LONGEST_KEPT_LINE characters (then forgotten all
        at once), so what a long-running process keeps here stays within a few megabytes."""
        known = self._lines.get(line)
        if known is None:
            words, compounds = self._words_and_compounds(line)
            known = (tuple(words), tuple(compounds))
            if len(line) <= _LONGEST_KEPT_LINE:
                if len(self._lines) >= _MOST_LINES:
                    self._lines.clear()
                self._lines[line] = known
        return known

    def analyse(self, text: str) -> list[str]:
        """`terms`, computed (not remembered)."""
        words, compounds = self._words_and_compounds(text)
        return [*words, *compounds]

    def _words_and_compounds(self, text: str) -> tuple[list[str], list[str]]:
        """The terms of the words of `text`, and those of its joined compounds."""
        folded = _APOSTROPHES.sub("", normalise(text))
        known = self._words
        if _ANY_CJK.search(folded) is None:
            found = _remembered_words(self, known, _WORD.findall(folded))
        else:
            found = []
            for cjk, word in _TOKEN.findall(folded):
                if cjk:
                    found.extend(self._cjk_terms(cjk))
                else:
                    found.extend(_remembered_words(self, known, [word]))
        joined: list[str] = []
        if self.compounds and "-" in folded:
            compounds = [compound.replace("-", "") for compound in _COMPOUND.findall(folded)]
            joined = _remembered_words(self, known, compounds)
        return found, joined

    def word_terms(self, word: str) -> list[str]:
        """The terms of one word (none for a stopword), computed."""
        if len(word) > MAX_TERM_CHARS or (self.stopwords and word in ENGLISH_STOPWORDS):
            return []
        if self.lemmas:
            word = IRREGULAR_LEMMAS.get(word, word)
        if self.stem and word.isascii() and word.isalpha():
            return [porter_stem(word)]
        return [word]

    def unique_terms(self, text: str) -> list[str]:
        """The distinct terms of `text`, in order of first appearance (a query's terms)."""
        return list(dict.fromkeys(self.terms(text)))

    def _cjk_terms(self, run: str) -> Iterable[str]:
        pieces = _CHINESE_SPLIT.split(run) if self.stopwords else [run]
        for piece in pieces:
            if not piece or (self.stopwords and piece in CHINESE_STOPWORDS):
                continue
            if len(piece) == 1 or not self.cjk_bigrams:
                yield piece
                continue
            for index in range(len(piece) - 1):
                yield piece[index : index + 2]


DEFAULT_ANALYZER = Analyzer()


def normalise(text: str) -> str:
    """NFKC and case folding: full-width letters, ligatures and case all compare equal."""
    return unicodedata.normalize("NFKC", text).casefold()


def normalise_title(title: str) -> str:
    """The form in which two titles are "the same" for merging: folded, spaces collapsed."""
    return " ".join(normalise(title).split())


# ------------------------------------------------------------------------- Porter stemmer
# M. F. Porter, "An algorithm for suffix stripping", Program 14(3), 1980, with the two
# published corrections (`bli` → `ble`, `logi` → `log`). It conflates `painting`, `painted`
# and `paints` to `paint`, which is most of what lexical recall loses to inflection.

_VOWELS = frozenset("aeiou")

_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = ("al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize").split()


def _is_consonant(word: str, index: int) -> bool:
    letter = word[index]
    if letter in _VOWELS:
        return False
    if letter == "y":
        return index == 0 or not _is_consonant(word, index - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in [C](VC)^m[V]."""
    count = 0
    previous_vowel = False
    for index in range(len(stem)):
        vowel = not _is_consonant(stem, index)
        if previous_vowel and not vowel:
            count += 1
        previous_vowel = vowel
    return count


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, index) for index in range(len(stem)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (`hop`, not `snow`)."""
    return (
        len(word) >= 3
        and _is_consonant(word, len(word) - 1)
        and not _is_consonant(word, len(word) - 2)
        and _is_consonant(word, len(word) - 3)
        and word[-1] not in "wxy"
    )


def _replace(word: str, rules: tuple[tuple[str, str], ...], minimum: int) -> str:
    """Apply the rule of the longest matching suffix, only if its stem's measure > minimum."""
    for suffix, replacement in sorted(rules, key=lambda rule: -len(rule[0])):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > minimum else word
    return word


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """The Porter stem of a lowercase word; words of one or two letters are kept as they are."""
    if len(word) <= 2:
        return word
    # Step 1a: plurals.
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    # Step 1b: -eed, -ed, -ing.
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = word[: -len(suffix)]
                if word.endswith(("at", "bl", "iz")):
                    word += "e"
                elif _double_consonant(word) and word[-1] not in "lsz":
                    word = word[:-1]
                elif _measure(word) == 1 and _cvc(word):
                    word += "e"
                break
    # Step 1c: y → i after a vowel-bearing stem.
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    # Step 4: drop a suffix when the remaining stem is long enough (m > 1).
    for suffix in sorted(_STEP4, key=len, reverse=True):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                word = stem
            break
    # Step 5: a final -e, and -ll → -l.
    if word.endswith("e"):
        stem = word[:-1]
        measure = _measure(stem)
        if measure > 1 or (measure == 1 and not _cvc(stem)):
            word = stem
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


# Bounds of an analyser's memory (`Analyzer._line`, `_remembered_words`): the lines of the
# latest texts (a text is analysed again as the linked context of the turns after it), and
# the term of each word seen ("" for none), as a vocabulary repeats far more than texts do.
_MOST_LINES = 8192
# A chat turn's line is a few hundred characters; a longer one seldom recurs.
_LONGEST_KEPT_LINE = 1024
_MOST_WORDS = 65536


def _remembered_words(analyzer: Analyzer, known: dict[str, str], words: list[str]) -> list[str]:
    """The terms of these words, in order (a word has at most one term): looked up all at
    once, and only the words not seen yet analysed one by one."""
    terms = list(map(known.get, words))
    if None in terms:
        for index, term in enumerate(terms):
            if term is None:
                word = words[index]
                computed = analyzer.word_terms(word)
                if len(known) >= _MOST_WORDS:
                    known.clear()
                terms[index] = known[word] = computed[0] if computed else ""
    return list(filter(None, terms))
