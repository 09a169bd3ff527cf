"""Rerankers: the ONNX cross-encoder on a tiny model built here, the HTTP one against a scripted server.

The tiny model's logit for a (query, document) pair is "document words that also occur in the
query, minus one": a real word-overlap relevance computed by an ONNX graph over input_ids,
attention_mask and token_type_ids, so every score below is known exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support.scripted_openai import Reply, ScriptedOpenAI
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.normalizers import Lowercase
from tokenizers.pre_tokenizers import Whitespace
from tokenizers.processors import TemplateProcessing

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers import build_reranker
from cortadel_server.providers._http import RetryPolicy
from cortadel_server.providers.reranking import HttpReranker, OnnxReranker, Reranker
from cortadel_server.providers.reranking.http import endpoint

WORDS = ["where", "does", "ann", "work", "works", "at", "acme", "bob", "likes", "tea", "in", "berlin", "lives"]
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
FAST = RetryPolicy(base_delay=0.01)


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def build_cross_encoder(folder: Path, *, two_class: bool = False, token_type: int = TensorProto.INT64) -> Path:
    vocab = {token: i for i, token in enumerate(SPECIAL + WORDS)}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = Lowercase()
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))

    # weight 1 for real words, 0 for the special tokens and [UNK]
    weights = np.array([0.0] * len(SPECIAL) + [1.0] * len(WORDS), dtype=np.float32)
    f32 = TensorProto.FLOAT
    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=f32),
        helper.make_node("Cast", ["token_type_ids"], ["doc"], to=f32),
        helper.make_node("Sub", ["one", "doc"], ["not_doc"]),
        helper.make_node("Mul", ["mask", "not_doc"], ["query"]),  # (b, L): query positions
        helper.make_node("Mul", ["mask", "doc"], ["document"]),  # (b, L): document positions
        helper.make_node("Unsqueeze", ["input_ids", "axis2"], ["ids_col"]),
        helper.make_node("Unsqueeze", ["input_ids", "axis1"], ["ids_row"]),
        helper.make_node("Equal", ["ids_col", "ids_row"], ["same_bool"]),  # (b, L, L)
        helper.make_node("Cast", ["same_bool"], ["same"], to=f32),
        helper.make_node("Unsqueeze", ["query", "axis2"], ["query_col"]),
        helper.make_node("Mul", ["same", "query_col"], ["same_as_query"]),
        helper.make_node("ReduceMax", ["same_as_query"], ["in_query"], axes=[1], keepdims=0),  # (b, L)
        helper.make_node("Gather", ["weights", "input_ids"], ["token_weight"]),
        helper.make_node("Mul", ["token_weight", "in_query"], ["w1"]),
        helper.make_node("Mul", ["w1", "document"], ["w2"]),
        helper.make_node("ReduceSum", ["w2", "axis1"], ["overlap"], keepdims=1),  # (b, 1)
        helper.make_node("Sub", ["overlap", "one"], ["logit"]),
    ]
    if two_class:  # (not relevant, relevant) = (-logit / 2, logit / 2): same log-odds
        nodes += [
            helper.make_node("Mul", ["logit", "half"], ["pos"]),
            helper.make_node("Neg", ["pos"], ["neg"]),
            helper.make_node("Concat", ["neg", "pos"], ["logits"], axis=1),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["logit"], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "overlap_cross_encoder",
        [helper.make_tensor_value_info(name, token_type, ["batch", "tokens"]) for name in INPUTS],
        [helper.make_tensor_value_info("logits", f32, ["batch", 2 if two_class else 1])],
        initializer=[
            helper.make_tensor("weights", f32, [len(weights)], weights.tolist()),
            helper.make_tensor("one", f32, [], [1.0]),
            helper.make_tensor("half", f32, [], [0.5]),
            helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),  # axes stay int64 whatever the token type
            helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return folder


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> OnnxReranker:
    return OnnxReranker(build_cross_encoder(tmp_path_factory.mktemp("xenc")))


def test_onnx_reranker_scores_pairs_in_document_order(cross_encoder: OnnxReranker) -> None:
    scores = cross_encoder.score(
        "Where does Ann work?",
        ["Bob likes tea", "Ann works at Acme", "Ann does work at Acme", "where does ann work"],
    )
    # overlaps 0, 1 (ann), 3 (ann does work), 4
    assert scores == pytest.approx([sigmoid(-1), sigmoid(0), sigmoid(2), sigmoid(3)], abs=1e-6)
    assert isinstance(cross_encoder, Reranker)
    assert cross_encoder.name == "onnx"


def test_onnx_reranker_keeps_order_across_batches_of_mixed_lengths(cross_encoder: OnnxReranker) -> None:
    # 40 documents (three batches of 16), lengths deliberately out of order
    documents = [" ".join(["tea"] * (i % 7) + ["ann"] * (i % 3)) or "bob" for i in range(40)]
    scores = cross_encoder.score("ann", documents)
    assert scores == pytest.approx([sigmoid(i % 3 - 1) for i in range(40)], abs=1e-6)


def test_onnx_reranker_truncates_pairs_to_512_tokens(cross_encoder: OnnxReranker) -> None:
    # A pair keeps 512 tokens: [CLS] ann [SEP] + the first 508 document words + [SEP].
    two_inside = " ".join(["tea"] * 506 + ["ann"] * 10)
    none_inside = " ".join(["tea"] * 508 + ["ann"] * 10)
    assert cross_encoder.score("ann", [two_inside, none_inside]) == pytest.approx([sigmoid(1), sigmoid(-1)], abs=1e-6)
    assert cross_encoder.score("ann", []) == []


def test_onnx_reranker_reads_a_two_class_head(tmp_path: Path) -> None:
    reranker = OnnxReranker(build_cross_encoder(tmp_path, two_class=True))
    assert reranker.score("ann works", ["ann works at acme", "bob"]) == pytest.approx([sigmoid(1), sigmoid(-1)], abs=1e-6)


def test_onnx_reranker_feeds_int32_token_inputs_to_a_graph_that_wants_them(tmp_path: Path) -> None:
    reranker = OnnxReranker(build_cross_encoder(tmp_path, token_type=TensorProto.INT32))
    assert reranker.score("ann works", ["ann works at acme", "bob"]) == pytest.approx([sigmoid(1), sigmoid(-1)], abs=1e-6)


def test_onnx_reranker_rejects_a_directory_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match=r"model\.onnx not found"):
        OnnxReranker(tmp_path)


# -- http ----------------------------------------------------------------------------------------


@pytest.fixture
def api() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://tei:8080", ("http://tei:8080/rerank", "tei")),
        ("http://llama:8080/rerank", ("http://llama:8080/rerank", "tei")),
        ("http://llama:8080/v1", ("http://llama:8080/v1/rerank", "cohere")),
        ("http://llama:8080/v1/", ("http://llama:8080/v1/rerank", "cohere")),
        ("https://api.jina.ai/v1/rerank", ("https://api.jina.ai/v1/rerank", "cohere")),
        ("https://api.cohere.com/v2/rerank", ("https://api.cohere.com/v2/rerank", "cohere")),
    ],
)
def test_the_url_picks_endpoint_and_dialect(url: str, expected: tuple[str, str]) -> None:
    assert endpoint(url) == expected


def test_http_reranker_speaks_tei(api: ScriptedOpenAI) -> None:
    api.enqueue("/rerank", Reply(body=[{"index": 1, "score": 0.9}, {"index": 0, "score": 0.1}]))
    reranker = HttpReranker(api.base_url, policy=FAST)
    try:
        assert reranker.score("where does ann work", ["bob likes tea", "ann works at acme"]) == [0.1, 0.9]
        assert api.requests[0].body == {"query": "where does ann work", "texts": ["bob likes tea", "ann works at acme"], "truncate": True}
    finally:
        reranker.close()


def test_http_reranker_speaks_the_cohere_dialect(api: ScriptedOpenAI) -> None:
    api.enqueue("/v1/rerank", Reply(body={"model": "bge", "results": [
        {"index": 2, "relevance_score": 0.7}, {"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": -2.5},
    ]}))
    reranker = HttpReranker(api.v1_url, model="bge-reranker-v2-m3", api_key="sk-r", policy=FAST)
    try:
        assert reranker.score("q", ["a", "b", "c"]) == [0.5, -2.5, 0.7]
        (request,) = api.requests
        assert request.path == "/v1/rerank"
        assert request.body == {"query": "q", "documents": ["a", "b", "c"], "top_n": 3, "model": "bge-reranker-v2-m3"}
        assert request.headers["authorization"] == "Bearer sk-r"
        assert reranker.score("q", []) == []
        assert len(api.requests) == 1
    finally:
        reranker.close()


def test_http_reranker_reads_voyage_data_key_and_retries_503(api: ScriptedOpenAI) -> None:
    api.enqueue("/v1/rerank", Reply.error(503, "loading", retry_after=0),
                Reply(body={"data": [{"index": 0, "relevance_score": 0.25}]}))
    reranker = HttpReranker(api.v1_url + "/rerank", policy=FAST)
    try:
        assert reranker.score("q", ["a"]) == [0.25]
        assert len(api.requests) == 2
    finally:
        reranker.close()


def test_http_reranker_rejects_incomplete_or_odd_replies(api: ScriptedOpenAI) -> None:
    api.enqueue("/rerank", Reply(body=[{"index": 0, "score": 0.3}]), Reply(body={"unexpected": True}))
    reranker = HttpReranker(api.base_url, policy=FAST)
    try:
        with pytest.raises(ProviderError, match=r"scored documents \[0\] of 2"):
            reranker.score("q", ["a", "b"])
        with pytest.raises(ProviderError, match="unexpected reply"):
            reranker.score("q", ["a"])
    finally:
        reranker.close()


def test_build_reranker_follows_the_settings(api: ScriptedOpenAI, tmp_path: Path) -> None:
    assert build_reranker(Settings()) is None
    local = build_reranker(Settings(reranker="onnx", reranker_model=str(build_cross_encoder(tmp_path))))
    assert isinstance(local, OnnxReranker)
    remote = build_reranker(Settings(reranker="http", reranker_url=api.v1_url, reranker_model="m", reranker_api_key="k"))
    assert isinstance(remote, HttpReranker)
    try:
        assert (remote.url, remote.dialect, remote.model) == (api.v1_url + "/rerank", "cohere", "m")
    finally:
        remote.close()
