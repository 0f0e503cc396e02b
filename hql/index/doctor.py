"""`hql index doctor`: is the semantic index fit to answer, and can its model cross languages?

Three checks, each reported on its own:

* the store's health: `index verify`'s checks (pins, damaged rows, stale or missing cards);
* coverage: how many cards are embedded, stale or missing (as `index status` counts them);
* the model's cross-language check: the same questions asked in several languages are
  embedded as queries; a model that understands a language puts each question nearer its
  English twin than the other English questions. The margin is how far the paired cosine
  goes from the mean cosine to the unpaired questions towards 1, (paired - unpaired) /
  (1 - unpaired), so that it reads the same on models whose cosines crowd near 1 (e5) as
  on models whose cosines spread from 0 (MiniLM); below `CROSS_LANGUAGE_MARGIN` in a
  language, its questions will not find notes written in another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hql import messages
from hql.index.errors import SemanticIndexError

if TYPE_CHECKING:
    from hql.index.embedders import Embedder
    from hql.index.reader import VaultLike

# Measured on these questions: multilingual-e5-small's margins are 0.46 (zh) to 0.61 (pt),
# every question nearest its twin; all-MiniLM-L6-v2 (English only) reaches 0.07-0.12.
CROSS_LANGUAGE_MARGIN = 0.3

PAIRED_QUESTIONS: dict[str, tuple[str, ...]] = {
    "en": (
        "Where are my notes stored on disk?",
        "How do I sync my vault between two computers?",
        "What should I pack for a week of hiking in the mountains?",
        "How long do I boil an egg for a soft yolk?",
        "Why is the sea level rising along the coast?",
        "How can I change the colour theme of the app?",
        "Which documents do I need to renew my passport?",
        "How do I back up my files before updating?",
    ),
    "pt": (
        "Onde minhas notas ficam guardadas no disco?",
        "Como sincronizo meu cofre entre dois computadores?",
        "O que devo levar para uma semana de trilha nas montanhas?",
        "Quanto tempo devo cozinhar um ovo para a gema ficar mole?",
        "Por que o nível do mar está subindo ao longo da costa?",
        "Como posso mudar o tema de cores do aplicativo?",
        "Quais documentos preciso para renovar meu passaporte?",
        "Como faço backup dos meus arquivos antes de atualizar?",
    ),
    "es": (
        "¿Dónde se guardan mis notas en el disco?",
        "¿Cómo sincronizo mi bóveda entre dos ordenadores?",
        "¿Qué debo llevar para una semana de senderismo en la montaña?",
        "¿Cuánto tiempo hiervo un huevo para que la yema quede blanda?",
        "¿Por qué está subiendo el nivel del mar en la costa?",
        "¿Cómo puedo cambiar el tema de colores de la aplicación?",
        "¿Qué documentos necesito para renovar mi pasaporte?",
        "¿Cómo hago una copia de seguridad de mis archivos antes de actualizar?",
    ),
    "de": (
        "Wo werden meine Notizen auf der Festplatte gespeichert?",
        "Wie synchronisiere ich meinen Tresor zwischen zwei Computern?",
        "Was sollte ich für eine Woche Wandern in den Bergen einpacken?",
        "Wie lange koche ich ein Ei für ein weiches Eigelb?",
        "Warum steigt der Meeresspiegel an der Küste?",
        "Wie kann ich das Farbschema der App ändern?",
        "Welche Unterlagen brauche ich, um meinen Reisepass zu verlängern?",
        "Wie sichere ich meine Dateien vor einem Update?",
    ),
    "ja": (
        "ノートはディスクのどこに保存されていますか？",
        "2台のパソコンの間で保管庫を同期するにはどうすればいいですか？",
        "山で1週間ハイキングするには何を持っていけばいいですか？",
        "黄身を半熟にするには卵を何分ゆでればいいですか？",
        "なぜ海岸沿いで海面が上昇しているのですか？",
        "アプリのカラーテーマを変更するにはどうすればいいですか？",
        "パスポートを更新するにはどの書類が必要ですか？",
        "更新する前にファイルをバックアップするにはどうすればいいですか？",
    ),
    "zh": (
        "我的笔记存储在磁盘的什么位置？",
        "如何在两台电脑之间同步我的库？",
        "在山里徒步一周应该带些什么？",
        "煮鸡蛋要多久蛋黄才是软的？",
        "为什么沿海的海平面在上升？",
        "如何更改应用的配色主题？",
        "更新护照需要哪些文件？",
        "更新之前如何备份我的文件？",
    ),
}


def cross_language(embedder: Embedder) -> list[dict[str, Any]]:
    """Per language: mean paired cosine, mean unpaired cosine, their margin, and how many
    questions have their English twin as nearest English question."""
    import numpy as np

    english = _unit(embedder.embed_queries(list(PAIRED_QUESTIONS["en"])))
    rows = []
    for language, questions in PAIRED_QUESTIONS.items():
        if language == "en":
            continue
        cosines = _unit(embedder.embed_queries(list(questions))) @ english.T
        paired = np.diag(cosines)
        count = len(questions)
        unpaired = (cosines.sum(axis=1) - paired) / (count - 1)
        margin = float(np.mean((paired - unpaired) / np.maximum(1.0 - unpaired, 1e-6)))
        rows.append(
            {
                "language": language,
                "paired": round(float(np.mean(paired)), 3),
                "unpaired": round(float(np.mean(unpaired)), 3),
                "margin": round(margin, 3),
                "matched": int(np.sum(np.argmax(cosines, axis=1) == np.arange(count))),
                "questions": count,
                "ok": margin >= CROSS_LANGUAGE_MARGIN,
            }
        )
    return rows


def _unit(matrix: Any) -> Any:
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


def diagnose(vault: VaultLike, embedder: Embedder | None = None) -> dict[str, Any]:
    """The three checks as one JSON-ready report; `ok` is false when any check fails."""
    from hql.index.commands import _verify_lines
    from hql.index.config import load_semantics_config
    from hql.index.coverage import coverage
    from hql.index.embedders import make_embedder
    from hql.index.producer import verify_index
    from hql.index.reader import raw_config

    report: dict[str, Any] = {}
    try:
        verified = verify_index(vault)
        problems = [] if verified.ok else _verify_lines(verified)
        if verified.ok and not verified.pinned:
            problems = [messages.index_verify_unpinned()]
        report["store"] = {"ok": verified.ok and verified.pinned, "problems": problems}
    except SemanticIndexError as error:
        report["store"] = {"ok": False, "problems": [error.message]}
    try:
        found = coverage(vault)
        report["coverage"] = {
            key: found[key]
            for key in ("index", "store", "model", "cards", "embedded", "stale", "missing", "extra")
        }
        report["coverage"]["ok"] = found["embedded"] == found["cards"] and not found["extra"]
    except SemanticIndexError as error:
        report["coverage"] = {"ok": False, "problems": [error.message]}
    try:
        config = load_semantics_config(raw_config(vault))
        model = embedder or make_embedder(config.require_embedder())
        rows = cross_language(model)
        report["cross_language"] = {
            "model": model.model_id,
            "threshold": CROSS_LANGUAGE_MARGIN,
            "languages": rows,
            "ok": all(row["ok"] for row in rows),
        }
    except SemanticIndexError as error:
        report["cross_language"] = {"ok": False, "problems": [error.message]}
    report["ok"] = all(report[key]["ok"] for key in ("store", "coverage", "cross_language"))
    return report


def format_diagnosis(report: dict[str, Any]) -> str:
    store, found, crossing = report["store"], report["coverage"], report["cross_language"]
    lines = [messages.doctor_store_ok() if store["ok"] else messages.doctor_store_problems()]
    lines += [f"  {problem}" for problem in store["problems"]]
    if "problems" in found:
        lines.append(messages.doctor_coverage_unknown())
        lines += [f"  {problem}" for problem in found["problems"]]
    else:
        lines.append(
            messages.doctor_coverage(
                found["cards"], found["embedded"], found["stale"], found["missing"], found["extra"]
            )
        )
    if "problems" in crossing:
        lines.append(messages.doctor_cross_language_unknown())
        lines += [f"  {problem}" for problem in crossing["problems"]]
    else:
        lines.append(messages.doctor_cross_language(crossing["model"], crossing["threshold"]))
        for row in crossing["languages"]:
            line = messages.doctor_cross_language_row(
                row["language"], row["margin"], row["paired"], row["matched"], row["questions"]
            )
            lines.append(f"  {line}" if row["ok"] else f"  {messages.doctor_warning(line)}")
        weak = [row["language"] for row in crossing["languages"] if not row["ok"]]
        if weak:
            lines.append(messages.doctor_cross_language_weak(crossing["model"], weak))
    return "\n".join(lines)
