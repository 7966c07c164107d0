"""Sphinx extension: the bibliography in alphabetical order of the first author, as its page says.

pybtex's ``plain`` style sorts on each name as the ``.bib`` file spells it, lower-cased. There an accent command or a
brace sorts after every letter, so ``H{\\'a}jek`` came after Horn, and the authors written in braces as one name
(``{{NVIDIA Corporation}}``, ``{{tohoku-nlp}}``) came after everyone else. This extension registers the style
``alphabetical``: ``plain``'s entries, sorted by ``plain``'s key (surnames, given names, year, title) computed on the
names as a reader sees them, LaTeX decoded, braces dropped, accents and case folded. ``_config.yml`` selects it with
``bibtex_default_style: alphabetical``.
"""

import unicodedata

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitle

#: The name under which the style is registered, for both pybtex plugin groups.
STYLE = "alphabetical"


def folded(text: str) -> str:
    """``text`` without its accents, case-folded: ``'Hájek'`` gives ``'hajek'``."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


class AlphabeticalSorting(AuthorYearTitle):
    """``author_year_title``, with each person's key read from the rendered names instead of their LaTeX source."""

    def person_key(self, person):
        def rendered(parts):
            return " ".join(str(part) for part in parts)

        return folded("  ".join((rendered(person.rich_prelast_names + person.rich_last_names),
                                 rendered(person.rich_first_names + person.rich_middle_names),
                                 rendered(person.rich_lineage_names))))


class AlphabeticalStyle(PlainStyle):
    """``plain``, sorted by :class:`AlphabeticalSorting`."""

    default_sorting_style = STYLE


def register() -> None:
    """Make ``alphabetical`` known to pybtex as a formatting and a sorting style."""
    register_plugin("pybtex.style.sorting", STYLE, AlphabeticalSorting, force=True)
    register_plugin("pybtex.style.formatting", STYLE, AlphabeticalStyle, force=True)


def setup(app):
    register()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
