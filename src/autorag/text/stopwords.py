"""Function words per language, dropped from queries (never from the index): they
match nearly every passage, so an OR-query keeps them out to stay selective."""

from __future__ import annotations

from autorag.text.keywords import STOPWORDS as ENGLISH


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS: dict[str, frozenset[str]] = {
    "en": ENGLISH,
    "es": _words(
        "a al algo ante con como cual cuál de del desde donde dónde e el ella ellos en entre "
        "era es esa ese eso esta está este esto fue ha han hay la las le les lo los mi más "
        "me mis muy ni no nos o para pero por que qué quien quién se sea si sí sin sobre "
        "son su sus también te tengo tiene tu un una uno unos unas y ya yo cuanto cuánto "
        "cuanta cuánta cuantos cuántos cuantas cuántas cómo cuando cuándo"
    ),
    "it": _words(
        "a ad agli ai al alla alle allo anche che chi ci come con cosa cui da dal dalla dei "
        "del della delle dello di dove e è gli ha hanno ho i il in io la le lo ma mi mio "
        "ne nei nel nella nelle non o per perché più quale quali quando quanto quanta "
        "quanti quante questa questo se si sono su sua sue suo sul sulla tra tu un una uno"
    ),
    "de": _words(
        "der die das den dem des ein eine einen einem einer und oder aber in im an am auf "
        "aus bei mit nach von vor zu zum zur ist sind war wie was wer wo wann warum ich du "
        "er sie es wir ihr nicht kein keine auch noch für über unter"
    ),
    "fr": _words(
        "le la les l un une des du de d et ou mais à au aux en dans par pour sur avec sans "
        "ce cet cette ces est sont a ont je tu il elle nous vous ils elles ne pas que qui "
        "quoi quel quelle quels quelles comment où quand combien se sa son ses leur leurs"
    ),
    "pt": _words(
        "a o as os um uma uns umas de do da dos das em no na nos nas e ou mas por para com "
        "sem que qual quais quem como onde quando quanto é são foi ser se seu sua seus "
        "suas ao aos não eu tu ele ela nós vós eles elas"
    ),
}
