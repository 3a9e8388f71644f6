"""English stopwords: the package's one list and the named subsets its readers use.

Every reader of words (near-duplicate links, question scope, admission features, the
offline text readers, BM25 retrieval) skips the words of :data:`STOPWORDS` it names: a
subset of it, built here from the word groups below. The subsets differ because each was
measured with its own list (question matching thresholds, BM25 rankings, ConMem features,
what the text reader reads as an answer); merging them would change those results, so each
keeps its words, documented beside it.
"""

from __future__ import annotations

__all__ = [
    "ADMISSION_STOPWORDS",
    "FUNCTION_WORDS",
    "LINK_STOPWORDS",
    "OPENING_WORDS",
    "PROBE_STOPWORDS",
    "QUESTION_STOPWORDS",
    "READING_STOPWORDS",
    "SEARCH_STOPWORDS",
    "STOPWORDS",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The word groups (each word in exactly one group).
_CORE = _words(
    """
    a an and are as at be been but by did do does for from he i in is it me my no not of on
    or she that the these they this those to was were with you your
    """
)
"""Articles, pronouns, prepositions and auxiliaries every subset skips."""
_AM = _words("am")
_HAS = _words("has have")
_COMMON = _words("about being had her here his its just our so than their them then there very we")
"""Further common function words (all but the admission features skip them)."""
_ALSO = _words("also")
_CLAUSE = _words(
    """
    after all before could during each having hers him how if into other over own same should
    some such theirs too under until when where which whom why will would
    """
)
"""Clause words, modals and determiners of the longer lists."""
_ASKING = _words("any can what who")
"""What a question asks with."""
_READER = _words("done every it's may might mine must onto s shall since t us whose without yes")
"""Further function words of the text readers' lists."""
_VAGUE = _words(
    """
    day even get go going gone got last like lot lots made make many month much new one
    really recently still thing things time today way week well went year yesterday
    """
)
"""Words that place nothing: no answer is specific for naming them."""
_DEGREE = _words("more most now")
_CLASSIC = _words(
    """
    above again below between both doing down few further herself himself itself myself nor
    off once only ours ourselves out themselves through up while yours yourself
    """
)
"""The rest of the classic English stopword list (BM25's and question scope's)."""
_CAUSAL = _words("against because")
_REQUEST = _words("ever know please question quick remember remind tell yourselves")
"""How people phrase a request to an assistant (``remind me``, ``quick question``)."""
_USER = _words("user user's")
"""How a conversation names its speaker."""

LINK_STOPWORDS = _CORE | _HAS | _COMMON | _ALSO
"""The short list of near-duplicate links between memories (``core.grouping``)."""
FUNCTION_WORDS = LINK_STOPWORDS | _AM | _CLAUSE | _ASKING | _READER
"""English function words (the offline text reader of the benchmark harness)."""
READING_STOPWORDS = FUNCTION_WORDS | _VAGUE | _DEGREE
"""Function words and words that place nothing (the admission reader, ``admission.reading``)."""
SEARCH_STOPWORDS = _CORE | _AM | _HAS | _COMMON | _CLAUSE | _ASKING | _DEGREE | _CLASSIC | _CAUSAL
"""The classic English list (the benchmark harness's BM25 retrieval: idf already discounts
frequent words, this keeps function words from matching questions to every record)."""
QUESTION_STOPWORDS = (SEARCH_STOPWORDS - _CAUSAL) | _REQUEST
"""Words that say nothing of what a question is about (question scope, ``ledger.scope``)."""
ADMISSION_STOPWORDS = _CORE | _AM | _USER
"""The admission features' short list (``admission.features``)."""
PROBE_STOPWORDS = ADMISSION_STOPWORDS | _HAS | _ASKING
"""The scripted admission model's words for matching probes (``admission.scripted``)."""
OPENING_WORDS = _words(
    """
    a an the this that these those it he she they we i my his her their our its there what
    which who where when how
    """
)
"""Determiners, pronouns and question words a sentence opens with (the benchmark's
paraphrase templates lower them inside a sentence)."""
STOPWORDS = READING_STOPWORDS | SEARCH_STOPWORDS | QUESTION_STOPWORDS | ADMISSION_STOPWORDS
"""Every stopword of the package: the union of the subsets above."""
