from __future__ import annotations

import pytest

from hql.text.analyzer import Analyzer, SearchConfigError, normalize, segment


@pytest.fixture(scope="module")
def analyzer() -> Analyzer:
    return Analyzer.from_config(None)


def test_case_accents_and_full_width_fold_together(analyzer: Analyzer) -> None:
    assert segment("ＣＡＦÉ Café cafe") == ["cafe", "cafe", "cafe"]
    assert segment("Ёлка Ελλάδα Straße") == ["елка", "ελλαδα", "strasse"]


def test_kana_keep_their_voicing_marks() -> None:
    assert segment("ガ") != segment("カ")
    assert segment("ｶﾞ") == segment("ガ")  # half-width kana become full-width first


def test_indic_vowel_signs_stay_inside_words() -> None:
    assert segment("हिन्दी भाषा।") == ["हिन्दी", "भाषा"]


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("R$ 20,00", "20"),
        ("US$20.00", "20"),
        ("1.234,50", "1234.5"),
        ("1,000", "1000"),
        ("3.14", "3.14"),
    ],
)
def test_numbers_and_currency_normalise(text: str, number: str) -> None:
    assert segment(text) == [number]


def test_icu_segments_scripts_without_spaces() -> None:
    assert segment("我们在北京大学学习") == ["我们", "在", "北京", "大学", "学习"]
    assert segment("ภาษาไทยเป็นภาษาที่ยาก") == ["ภาษา", "ไทย", "เป็น", "ภาษา", "ที่", "ยาก"]
    assert "東京タワー" in segment("東京タワーは高い")


def test_apostrophes_and_underscores_separate_words() -> None:
    assert segment("l'homme snake_case") == ["l", "homme", "snake", "case"]


def test_stop_and_question_words_are_ignored_and_reported(analyzer: Analyzer) -> None:
    analysis = analyzer.analyze("What is the capital of France?")
    assert analysis.words == ("capital", "france")
    assert analysis.ignored == ("what", "is", "the", "of")
    for question in ("Onde está?", "¿Dónde está?", "Où est-il ?", "Wo ist es?", "Где это?"):
        assert analyzer.analyze(question).words == (), question
    assert analyzer.analyze("東京はどこですか").words == ("東京",)


def test_terms_add_prefixes_and_cjk_bigrams(analyzer: Analyzer) -> None:
    terms = analyzer.analyze("houses 北京大学").terms
    assert "pref:house" in terms and "houses" in terms
    assert {"bi:北京", "bi:京大", "bi:大学"} <= set(terms)
    assert "pref:hous" not in analyzer.analyze("hous").terms  # 4 letters: no prefix


def test_vault_ignore_and_synonyms() -> None:
    analyzer = Analyzer.from_config(
        {"ignore": ["Menu"], "synonyms": [["bike", "bicycle", "Fahrrad"]]}
    )
    analysis = analyzer.analyze("menu for the bicycle")
    assert analysis.words == ("bicycle",)
    assert "menu" in analysis.ignored
    assert analysis.synonyms == (("bicycle", "bike"),)
    assert "syn:bike" in analysis.terms
    assert "syn:bike" in analyzer.analyze("FAHRRAD").terms


def test_builtin_synonyms_cover_phrases_and_can_be_turned_off() -> None:
    analysis = Analyzer.from_config(None).analyze("Qual o horário de funcionamento?")
    assert analysis.synonyms == (("horario de funcionamento", "opening hours"),)
    assert Analyzer.from_config(None).analyze("preço").synonyms == (("preco", "price"),)
    assert Analyzer.from_config({"builtin_synonyms": False}).analyze("preço").synonyms == ()


@pytest.mark.parametrize(
    "section",
    [
        {"ignore": "menu"},
        {"synonyms": ["a", "b"]},
        {"synonyms": [[1, 2]]},
        {"builtin_synonyms": "no"},
    ],
)
def test_bad_search_config_is_refused_with_a_message(section: dict[str, object]) -> None:
    with pytest.raises(SearchConfigError, match=r"`\[search\]"):
        Analyzer.from_config(section, strict=True)
    lenient = Analyzer.from_config(section)
    assert len(lenient.config_warnings) == 1
    assert "`[search]" in lenient.config_warnings[0] and "ignored" in lenient.config_warnings[0]
    assert lenient.analyze("the price").words == ("price",)


def test_a_bad_entry_leaves_the_good_ones_working() -> None:
    analyzer = Analyzer.from_config({"ignore": "menu", "synonyms": [["bike", "bicycle"]]})
    assert "syn:bike" in analyzer.analyze("bicycle").terms
    assert analyzer.config_warnings


def test_fingerprint_follows_the_configuration() -> None:
    assert Analyzer().fingerprint == Analyzer.from_config({}).fingerprint
    assert Analyzer().fingerprint != Analyzer.from_config({"ignore": ["x"]}).fingerprint
    assert Analyzer().fingerprint.startswith("hql.analyzer.1+")


def test_astral_characters_survive_icu_offsets() -> None:
    assert segment("𠀀𠀁 日本")[-1] == "日本"


def test_normalize_is_idempotent() -> None:
    text = "Ｒ$ 1.234,50 — Ação"
    assert normalize(normalize(text)) == normalize(text)


def test_vietnamese_keeps_its_tone_marks_and_its_own_stop_words(analyzer: Analyzer) -> None:
    assert segment("Người Việt ăn phở và má") == ["người", "việt", "ăn", "phở", "và", "má"]
    assert analyzer.analyze("con của mẹ").words == ("con", "mẹ")  # `con` is Spanish `with`


def test_thai_sara_am_survives_nfkc() -> None:
    assert segment("ทำอาหาร") == ["ทำ", "อาหาร"]


# --- stop words that need ICU are folded by the first text that could hold them -------


def test_an_english_query_needs_neither_icu_nor_the_cjk_patterns() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from hql.text import analyzer\n"
        "a = analyzer.Analyzer.from_config(None)\n"
        "print(a.analyze('The cancer treatments of Müller').words)\n"
        "print('icu' in sys.modules, analyzer._cjk_char.cache_info().currsize)\n"
        "print(a.analyze('がんの治療').ignored)\n"
        "print('icu' in sys.modules, analyzer._cjk_char.cache_info().currsize)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == [
        "('cancer', 'treatments', 'muller')",
        "False 0",
        "('の',)",  # a Japanese stop word, once a Japanese text came
        "True 1",
    ], done.stderr


@pytest.mark.parametrize("first", ["plain ascii text", "Ёлка Straße", "ქართული ენა"])
def test_deferred_stop_words_end_as_the_whole_list(first: str) -> None:
    from hql.text.stopwords import all_stop_words

    analyzer = Analyzer.from_config({"ignore": ["ของ"]})
    every = {" ".join(segment(word)) for word in all_stop_words()} | {"ของ"}
    analyzer.analyze(first)
    analyzer.analyze("ภาษาไทย และ 日本語")
    assert every <= analyzer._stop
    assert analyzer.analyze("และ").ignored == ("และ",)
    # Nothing folded later could have met a text without such characters.
    deferred = Analyzer.from_config(None)._deferred_stop
    later = {" ".join(segment(word)) for word in deferred}
    assert later and all(min(word.replace(" ", "")) >= "\u0e00" for word in later)


@pytest.mark.parametrize(
    "text",
    [
        "Deploy the OAuth2 token refresh",
        "东京的天气很好 and 1.234,50 EUR",
        "sync-service v2.1 #ops",
        "",
    ],
)
def test_term_list_holds_the_analysis_terms_analysed_or_not(text: str) -> None:
    analyzer = Analyzer.from_config({"synonyms": [["deploy", "ship"]]})
    unread = analyzer.term_list(text)  # not analysed yet: worked out alone
    full = analyzer.analyze(text).terms
    assert sorted(unread) == sorted(full)
    assert analyzer.term_list(text) == full  # analysed: the analysis's own


_MIXED_TEXTS = [
    "Deploy the OAuth2 token refresh; ship it (deploy) to production",
    "The Café of Müller: Ёлка, Ελλάδα and Straße",
    "东京的天气很好 and 1.234,50 EUR, R$ 20,00, US$20.00, 3.14 or 1,000",
    "がんの治療 と 日本語の文章; 한국어 문장입니다",
    "ภาษาไทย และ ภาษาลาว ພາສາລາວ",
    "Tiếng Việt có dấu: con mèo đang ngủ",
    "हिन्दी भाषा। l'homme n'est pas_là",
    "opening hours and the opening of 𠀀𠀁 astral",
    "",
    "the of and",  # stop words only
]


def _random_texts(count: int) -> list[str]:
    import random

    rng = random.Random(30)
    pieces = [
        *"abcdefghijklmnopqrstuvwxyz0123456789",
        *"ÀÉÎõüßçñ",
        *"东京天气日本語がんのカタ한국어",
        *"ภาษาไทย",
        *"ơưạềỹ",
        *" .,;:'_-$\n\t",
        "ship",
        "deploy",
        "opening hours",
        "the ",
        "20,00",
        "1.234,5",
    ]
    return ["".join(rng.choices(pieces, k=rng.randint(0, 80))) for _ in range(count)]


@pytest.mark.parametrize(
    "section", [None, {"ignore": ["token"], "synonyms": [["deploy", "ship"], ["hours", "time"]]}]
)
def test_term_numbers_number_the_terms_of_each_text_in_order(
    section: dict[str, object] | None,
) -> None:
    """An index numbers terms through `TermNumbers`: each text's numbers are its terms'
    (`Analyzer.terms`) in the same order, a new term numbered where it first occurs."""
    from hql.text.analyzer import TermNumbers

    def numbers_of(packed: bytearray) -> list[int]:  # as a build views them
        import numpy as np

        return np.frombuffer(packed, dtype=np.intc).tolist()

    texts = [*_MIXED_TEXTS, *_random_texts(300), *_MIXED_TEXTS]
    known = {"deploy": 0, "pref:deplo": 1, "unused": 2}
    expected: dict[str, int] = dict(known)
    reference = Analyzer.from_config(section)
    wanted = []
    for text in texts:
        terms = reference.terms(text)
        for term in terms:
            expected.setdefault(term, len(expected))
        wanted.append([expected[term] for term in terms])
    numbers = TermNumbers(Analyzer.from_config(section), known)
    packed = bytearray()
    lengths = [numbers.add(text, packed) for text in texts]
    flat = numbers_of(packed)
    got, at = [], 0
    for length in lengths:
        got.append(flat[at : at + length])
        at += length
    assert got == wanted
    assert numbers.new_terms(len(known)) == list(expected)[len(known) :]
    assert any(len(numbered) > 2 for numbered in wanted)  # the texts give terms
    # Terms analysed earlier take the same numbers, new ones the next.
    again = bytearray()
    assert numbers.add_terms(["ship", "zz-new"], again) == 2
    assert numbers_of(again) == [expected["ship"], len(expected)]


def test_the_word_patterns_split_as_their_backtracking_forms() -> None:
    """The word patterns' possessive quantifiers give nothing back: every text splits into
    the words the same patterns with backtracking find (random texts of word characters,
    digits, combining marks and the separators)."""
    import random
    import re

    from hql.text import analyzer as module

    word = module._WORD_CLASS
    backtracking = {
        module._ASCII_WORDS: re.compile(r"[0-9]+(?:[.,][0-9]+)+|[a-z0-9]+(?:\.[a-z0-9]+)*"),
        module._WORDS: re.compile(f"\\d+(?:[.,]\\d+)+|[{word}]+(?:\\.[{word}]+)*"),
    }
    alphabets = ("ab1209.,. ,-x_", "ab1209.,. ,-x_é٣३\u0301\u0915\u093e١٢")
    chosen = random.Random(7)
    for possessive, plain in backtracking.items():
        for alphabet in alphabets:
            for _ in range(20_000):
                text = "".join(chosen.choice(alphabet) for _ in range(chosen.randint(0, 14)))
                assert possessive.findall(text) == plain.findall(text), text


def test_plain_segmentation_splits_as_the_word_patterns() -> None:
    """Text segmented without normalising (`str.translate` and `str.split`, the patterns
    only for runs holding `.` or `,`; boundaries beyond ASCII read as spaces, plain letters
    kept) gives the words and flags that normalising and the word patterns give: random
    texts of letters, digits, separators, currency, boundaries (dashes, quotes, symbols, a
    CJK comma), plain letters (small Greek) and characters of neither kind (accents,
    capital or final Greek, superscripts, ligatures, marks, spaces NFKC changes, a Thai
    sign, a modifier letter that is a separator)."""
    import random

    from hql.text import analyzer as module

    ascii_only = "aB1209.,. ,.,-x_Z'`;:\n\t"
    boundaries = "–’±≥×“”·…、\u3001\u2028"
    letters = "βαγ"
    others = "é²µ≠\u00a0\u0301ﬁ，๏$ʼ´Δςüǰ"
    chosen = random.Random(11)
    plain = 0
    for alphabet in (
        ascii_only,
        ascii_only + boundaries,
        ascii_only + boundaries + letters,
        ascii_only + boundaries + letters + others,
    ):
        for _ in range(15_000):
            text = "".join(chosen.choice(alphabet) for _ in range(chosen.randint(0, 16)))
            assert module._tokenize(text) == module._tokenize_by_pattern(text), text
            plain += "$" not in text and (text.isascii() or module._plain_tokens(text) is not None)
    assert plain > 40_000  # most texts took the plain way
    prose = "Dorsal–ventral “patterning”, e.g. 1,000.5a ≥3.14 p.m. Spemann’s β.cells, α2. 2,a."
    assert module._tokenize(prose) == module._tokenize_by_pattern(prose)
    assert module._plain_tokens(prose) is not None
    assert module._tokenize(prose).words == [
        "dorsal", "ventral", "patterning", "e.g", "1,000.5", "a", "3.14", "p.m",
        "spemann", "s", "β.cells", "α2", "2", "a",
    ]  # fmt: skip


def test_synonyms_are_found_where_their_first_words_stand() -> None:
    """`_SynonymTable.find` looks only where a member's first word stands (found by
    `list.index`) and finds what a walk over every word finds: random word sequences of
    built-in members' words (phrases overlapping, repeated) and others."""
    import random

    analyzer = Analyzer.from_config({"synonyms": [["opening", "open door"], ["door", "gate"]]})
    table = analyzer._synonyms.by_first_word

    def walked(words: list[str]) -> list[tuple[str, str]]:
        found, covered = [], 0
        for position, word in enumerate(words):
            if position < covered or word not in table:
                continue
            for member, group in table[word]:
                if tuple(words[position : position + len(member)]) == member:
                    found.append((" ".join(member), group))
                    covered = position + len(member)
                    break
        return found

    vocabulary = ["opening", "hours", "open", "door", "gate", "business", "time", "x", "y"]
    chosen = random.Random(5)
    with_synonyms = 0
    for _ in range(5_000):
        words = [chosen.choice(vocabulary) for _ in range(chosen.randint(0, 12))]
        firsts = analyzer._synonym_starts.intersection(words)
        assert analyzer._synonyms.find(words, firsts) == walked(words), words
        with_synonyms += bool(walked(words))
    assert with_synonyms > 1_000
