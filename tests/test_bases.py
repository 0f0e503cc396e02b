"""`hql base`: Obsidian Bases files run as HQL, each view's rows checked against an
independent evaluation of the same file (tests/bases_evaluator.py)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from bases_compare import differences, hql_rows

import hql

GENRES = ("scifi", "essays", "poetry", "history")
AUTHORS = ("Ada Mensah", "Bruno Costa", "Chen Wei", "Dana Ilić", "Emeka Obi")

BOOKS_BASE = """\
filters:
  and:
    - categories.contains(link("Books"))
    - '!file.name.contains("Template")'
properties:
  file.name:
    displayName: Title
  note.author:
    displayName: Written by
views:
  - type: table
    name: Shelf
    order: [file.name, author, year, rating]
    sort:
      - property: year
        direction: DESC
      - property: file.name
        direction: ASC
  - type: table
    name: Best
    filters:
      and:
        - rating >= 4
        - year > 1900 && year < 2100
    order: [file.name, rating]
    sort:
      - property: rating
        direction: DESC
    limit: 5
  - type: table
    name: By this author
    filters:
      and:
        - list(author).contains(this)
    order: [file.name, year]
  - type: cards
    name: Grouped
    groupBy:
      property: genre
      direction: ASC
    order: [file.name, genre]
    image: cover
"""

RELATED_BASE = """\
filters:
  and:
    - file.path != this.file.path
formulas:
  Shared: list(this.file.links).filter(list(file.links).containsAny(value)).unique()
  Overlap: formula.Shared.length
views:
  - type: table
    name: Related
    filters:
      or:
        - formula.Overlap > 1
        - file.hasLink(this)
        - this.file.hasLink(file)
    order: [file.name, formula.Shared]
    sort:
      - property: formula.Overlap
        direction: DESC
    limit: 12
"""

DAILY_BASE = """\
filters:
  or:
    - file.name.contains(this.file.name)
    - created.toString().contains(this.file.name)
    - file.links.contains(this.file)
views:
  - type: table
    name: That day
    filters:
      not:
        - file.tags.contains("daily")
        - file.inFolder("Templates")
    order: [file.name, created]
    sort:
      - property: created
        direction: DESC
"""

MIXED_BASE = """\
filters:
  or:
    - file.hasTag("reading")
    - note.status == "done" && !file.inFolder("Templates")
    - file.embeds.length > 0
formulas:
  Pages: number(pages) * 2
  Late: if(due, due < "2024-01-01", false)
views:
  - type: table
    name: Mixed
    order: [file.name, formula.Pages, formula.Late, status]
    sort:
      - property: formula.Pages
        direction: ASC
  - type: list
    name: Late ones
    filters:
      and:
        - formula.Late
    order: [file.name]
"""

# kepano's Products, People and Ratings bases in small: formulas over dates and `now()`,
# rounding, a number shown as text (`toFixed`, so it sorts as text), backlinks, `isEmpty`,
# a `not` block inside an `or`, a date window relative to today.
PRODUCTS_BASE = """\
filters:
  and:
    - note.categories.contains(link("Products"))
    - '!file.name.contains("Template")'
formulas:
  Owned: ((now() - acquired).months).round()
  totalUses: monthlyUses * formula.Owned.round()
  perUse: (price / formula.totalUses).toFixed(2)
  Age: (now() - acquired).years.floor()
  Mentions: file.backlinks.length
views:
  - type: table
    name: Products
    order: [file.name, acquired, price, formula.perUse, formula.Owned, formula.totalUses]
    sort:
      - property: formula.perUse
        direction: ASC
      - property: formula.totalUses
        direction: ASC
      - property: file.name
        direction: DESC
  - type: table
    name: Unrated or unused
    filters:
      or:
        - rating.isEmpty()
        - not:
            - monthlyUses > 0
    order: [file.name, rating, monthlyUses]
  - type: table
    name: Recent
    filters:
      and:
        - acquired > now() - "800d"
    order: [file.name, acquired, formula.Age, formula.Mentions]
    sort:
      - property: formula.Age
        direction: DESC
      - property: formula.Mentions
        direction: DESC
  - type: table
    name: Used lately
    filters:
      and:
        - last > now() - "60d"
    order: [file.name, last]
  - type: table
    name: Maker
    filters:
      and:
        - list(maker).contains(this)
    order: [file.name, formula.Age]
    sort:
      - property: formula.Age
        direction: ASC
"""


def write_products(files: dict[str, str], chance: random.Random) -> None:
    """Products bought over the last seven years, some unrated or never used, by two makers."""
    import datetime

    today = datetime.date.today()
    for number in range(30):
        # Dates far from a month's or a year's edge: the rounded ages do not depend on the
        # second the two evaluations run in.
        bought = today - datetime.timedelta(days=20 + 61 * number + chance.randint(0, 5))
        rating = f"\nrating: {chance.randint(1, 5)}" if number % 4 else ""
        uses = f"\nmonthlyUses: {chance.choice([2, 4, 5, 12, 30])}" if number % 5 else ""
        maker = chance.choice(["Acme", "Borealis"])
        # When it was last used: a day, or (as kepano's notes write it) a link to a month note.
        used = today - datetime.timedelta(days=chance.choice([3, 30, 200]))
        last = f'"[[{used.isoformat()[:7]}]]"' if number % 3 == 0 else used.isoformat()
        files[f"Products/Product {number}.md"] = (
            f'---\ncategories: ["[[Products]]"]\nacquired: {bought.isoformat()}\n'
            f'price: {chance.choice([9, 49, 120, 399])}\nmaker: "[[{maker}]]"{rating}{uses}\n'
            f"last: {last}\n---\n# Product {number}\n"
        )
    for maker in ("Acme", "Borealis"):
        files[f"Companies/{maker}.md"] = f"# {maker}\n\n![[Products.base#Maker]]\n"
    files["Notes/Gear.md"] = "Worth it: " + ", ".join(
        f"[[Product {chance.randrange(30)}]]" for _ in range(12)
    )
    files["Templates/Product Template.md"] = '---\ncategories: ["[[Products]]"]\n---\n'


def write_vault(root: Path) -> Path:
    """A reading-notes vault in Obsidian's layout: books, people, daily notes, templates."""
    chance = random.Random(27)
    files: dict[str, str] = {}
    for number in range(120):
        author = chance.choice(AUTHORS)
        year = chance.choice([1851, 1925, 1961, 1984, 2003, 2019, 2023])
        rating = chance.randint(1, 5)
        categories = '["[[Books]]"]' if number % 6 else '["[[Books]]", "[[Favorites]]"]'
        status = chance.choice(["done", "reading", "queued"])
        pages = chance.choice([120, 240, 333, 500])
        due = f"\ndue: 202{chance.randint(2, 5)}-0{chance.randint(1, 9)}-1{chance.randint(0, 9)}"
        links = " ".join(f"[[Book {chance.randrange(120)}]]" for _ in range(chance.randint(0, 4)))
        tags = " #reading" if status == "reading" else ""
        embed = "\n![[cover.png]]" if number % 17 == 0 else ""
        files[f"Books/Book {number}.md"] = (
            f'---\ncategories: {categories}\nauthor: "[[{author}]]"\nyear: {year}\n'
            f"rating: {rating}\ngenre: {chance.choice(GENRES)}\nstatus: {status}\n"
            f"pages: {pages}{due if number % 3 == 0 else ''}\n"
            f"created: 2024-03-{1 + number % 28:02d}\n---\n"
            f"# Book {number}\n\nNotes on it, see {links}.{tags}{embed}\n"
        )
    for author in AUTHORS:
        files[f"People/{author}.md"] = f'---\ncategories: ["[[People]]"]\n---\n# {author}\n'
    for day in range(1, 15):
        name = f"2024-03-{day:02d}"
        files[f"Daily/{name}.md"] = (
            f"---\ntags: [daily]\n---\nRead [[Book {day}]] and [[Book {day * 3}]].\n"
        )
    files["Templates/Book Template.md"] = (
        '---\ncategories: ["[[Books]]"]\nauthor: ""\nstatus: done\n---\n'
    )
    files["Books.md"] = "# Books\n\n![[Books.base]]\n"
    files["Templates/Bases/Books.base"] = BOOKS_BASE
    files["Templates/Bases/Related.base"] = RELATED_BASE
    files["Templates/Bases/Daily.base"] = DAILY_BASE
    files["Templates/Bases/Mixed.base"] = MIXED_BASE
    files["Templates/Bases/Products.base"] = PRODUCTS_BASE
    write_products(files, chance)
    for relpath, text in files.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text, encoding="utf-8")
    (root / ".obsidian").mkdir()
    return root


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> hql.Vault:
    return hql.Vault.open(write_vault(tmp_path_factory.mktemp("reading")))


BASES = ("Books", "Related", "Daily", "Mixed", "Products")
THESE = (None, "Ada Mensah", "Book 7", "2024-03-05", "Acme")


@pytest.mark.parametrize("this", THESE, ids=lambda name: name or "the base")
@pytest.mark.parametrize("name", BASES)
def test_every_view_keeps_the_rows_an_independent_evaluation_keeps(
    vault: hql.Vault, name: str, this: str | None
) -> None:
    path = Path(vault.root) / "Templates" / "Bases" / f"{name}.base"
    assert differences(vault, path, this) == []


def test_the_views_are_not_trivially_empty(vault: hql.Vault) -> None:
    base = Path(vault.root) / "Templates" / "Bases"
    shelf = hql_rows(vault, base / "Books.base", "Ada Mensah")
    assert len(shelf["Shelf"]) == 120 and len(shelf["Best"]) == 5
    assert 0 < len(shelf["By this author"]) < 120
    related = hql_rows(vault, base / "Related.base", "Book 7")["Related"]
    assert 0 < len(related) <= 12
    day = hql_rows(vault, base / "Daily.base", "2024-03-05")["That day"]
    assert "Books/Book 4.md" in day and not any(
        row.startswith("Daily/") for row in day
    )  # created that day
    mixed = hql_rows(vault, base / "Mixed.base")
    assert 0 < len(mixed["Late ones"]) < len(mixed["Mixed"]) < 122


def test_the_product_views_are_not_trivially_empty(vault: hql.Vault) -> None:
    base = Path(vault.root) / "Templates" / "Bases" / "Products.base"
    shown = hql_rows(vault, base, "Acme")
    assert len(shown["Products"]) == 30
    assert 0 < len(shown["Unrated or unused"]) < 30
    assert 0 < len(shown["Recent"]) < 30
    assert 0 < len(shown["Maker"]) < 30
    assert 0 < len(shown["Used lately"]) < 20  # a link to a month is no date


def test_to_fixed_rounds_as_javascript_does() -> None:
    from hql.steps.bases import _to_fixed

    # A tie (the exact binary value halfway) goes away from zero; 1.005 is below its tie.
    assert [_to_fixed(x, 2) for x in (1.125, -1.125, 1.005, 7, 0.5)] == [
        "1.13", "-1.13", "1.00", "7.00", "0.50"
    ]  # fmt: skip
    assert _to_fixed(2.5, 0) == "3" and _to_fixed(0.1, 20) == "0.10000000000000000555"


def hql_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hql", *args], capture_output=True, text=True, check=False, cwd=cwd
    )


def test_the_command_prints_each_view_as_a_table(vault: hql.Vault) -> None:
    root = str(vault.root)
    run = hql_cli(
        "--vault", root, "base", f"{root}/Templates/Bases/Books.base", "--this", "Ada Mensah"
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "view: Shelf (120 rows)"
    assert lines[1].split() == ["Title", "Written", "by", "year", "rating"]
    assert "view: Best (5 rows)" in lines
    assert (
        "note: view `Grouped` is a `cards` view in Obsidian; it is shown here as a table"
        in run.stderr
    )
    assert "`image` only change how Obsidian draws it" in run.stderr
    assert "grouped by `genre`" in run.stderr
    explained = hql_cli(
        "--vault", root, "base", f"{root}/Templates/Bases/Books.base", "--explain", "--view", "Best"
    )
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.startswith('// view: Best\nthis = {file: {name: "Books"')
    assert 'base_call("contains", base_get(c, "note.categories"), base_fn("link", "Books"))' in (
        explained.stdout
    )
    assert "| take(5)" in explained.stdout and "view: Best (5 rows)" in explained.stdout
    shown = json.loads(
        hql_cli(
            "--vault", root, "--format", "json", "base", f"{root}/Templates/Bases/Books.base"
        ).stdout
    )
    assert [view["view"] for view in shown] == ["Shelf", "Best", "By this author", "Grouped"]
    assert shown[0]["columns"] == ["Title", "Written by", "year", "rating"]
    assert shown[2]["rows"] == []  # `this` is the base: no book is by it


def test_a_view_over_files_that_are_not_notes_says_its_rows_are_notes_only() -> None:
    from hql.bases.translate import read_base

    text = (
        'filters: \'!file.ext.containsAny("base", "md")\'\n'
        "views:\n  - type: cards\n    name: Images\n  - type: table\n    name: Plain\n"
        "    filters: 'file.ext == \"md\"'\n"
    )
    base = read_base("x.base", text, None, "x.base")
    said = {view.name: view.notes for view in base.views}
    assert any(
        "`Images` filters on `file.ext`: its rows are notes only" in n for n in said["Images"]
    )
    assert any("filters on `file.ext`" in n for n in said["Plain"])
    plain = read_base("y.base", "views:\n  - type: table\n    name: All\n", None, "y.base")
    assert not any("file.ext" in n for view in plain.views for n in view.notes)


@pytest.mark.parametrize(
    ("text", "message", "pointed"),
    [
        (
            "filters: 'file.name.frobnicate(1)'\n",
            "`frobnicate()` is not a Bases method",
            "frobnicate",
        ),
        ("filters: 'weird(1)'\n", "`weird()` is not a Bases function", "weird"),
        ("filters: 'rating >'\n", "unexpected the end of the expression", ""),
        (
            "views:\n  - name: x\n    order: [formula.Nope]\n",
            "the base has no formula `Nope`",
            "formula.Nope",
        ),
        ("filters: [\n", "the base is not YAML HQL can read", ""),
        ("views:\n  - name: x\n    limit: many\n", "`limit` is a whole number of rows", "limit"),
    ],
)
def test_reports_point_into_the_base_file(
    tmp_path: Path, text: str, message: str, pointed: str
) -> None:
    (tmp_path / "a.md").write_text("a\n")
    base = tmp_path / "broken.base"
    base.write_text(text)
    run = hql_cli("--vault", str(tmp_path), "base", str(base))
    assert run.returncode == 1
    assert message in run.stderr and "Traceback" not in run.stderr
    assert f"--> {base}:" in run.stderr
    if pointed:
        caret_line = [line for line in run.stderr.splitlines() if "^" in line][0]
        source_line = run.stderr.splitlines()[run.stderr.splitlines().index(caret_line) - 1]
        start = caret_line.index("^")
        assert source_line[start:].startswith(pointed)


def test_a_failure_while_running_points_into_the_base_file(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("---\nwhen: 2024-01-01\n---\n")
    base = tmp_path / "dates.base"
    base.write_text(
        'views:\n  - name: x\n    order: [file.name]\n    filters:\n      and:\n        - when + "soon" > 1\n'
    )
    run = hql_cli("--vault", str(tmp_path), "base", str(base))
    assert run.returncode == 1, run.stdout
    assert "a date moves by amounts with units" in run.stderr
    assert f"--> {base}:6:" in run.stderr


def test_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a\n")
    (tmp_path / "x.base").write_text("views:\n  - name: Only\n")
    missing = hql_cli("--vault", str(tmp_path), "base", str(tmp_path / "nope.base"))
    assert missing.returncode == 1 and "cannot read the base" in missing.stderr
    view = hql_cli("--vault", str(tmp_path), "base", str(tmp_path / "x.base"), "--view", "Other")
    assert view.returncode == 1 and "no view `Other` (its views: `Only`)" in view.stderr
    this = hql_cli("--vault", str(tmp_path), "base", str(tmp_path / "x.base"), "--this", "Ghost")
    assert this.returncode == 1 and "`--this Ghost` names no note" in this.stderr
    novault = hql_cli("base", str(tmp_path / "x.base"), cwd=tmp_path)
    assert novault.returncode == 1 and "pass --vault" in novault.stderr
