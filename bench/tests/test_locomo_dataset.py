"""The LoCoMo reader on a hand-made sample in the same format (the real data never enters the repo)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.errors import DatasetError
from bench.locomo.dataset import load, parse_evidence, parse_session_date, session_of
from bench.locomo.ingest import session_messages, turn_metadata

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_2_date_time": "9:05 am on 3 June, 2023",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Back from Porto!"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Look at this.", "blip_caption": "a photo of a bridge"},
        ],
    },
    "qa": [
        {"question": "What did Ana adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 4},
        {"question": "Where was Ben?", "answer": "Porto", "evidence": ["D1:2; D2:1", "D:11:26"], "category": 1},
        {"question": "No evidence?", "adversarial_answer": "x", "evidence": ["D:9"], "category": 5},
    ],
}


def test_evidence_is_split_and_filtered_to_known_turns() -> None:
    known = {"D8:6", "D9:17", "D1:1"}
    assert parse_evidence(["D8:6; D9:17", "D:11:26", "D1:1", "D7:7"], known) == frozenset({"D8:6", "D9:17", "D1:1"})


def test_session_dates_become_iso_timestamps() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00Z"
    assert parse_session_date("12:09 am on 13 September, 2023") == "2023-09-13T00:09:00Z"
    assert parse_session_date("sometime in May") is None


def test_session_of_maps_turn_ids_to_sessions() -> None:
    assert session_of("D12:4") == "S12"
    with pytest.raises(ValueError):
        session_of("D:11:26")


def test_load_orders_sessions_and_keeps_questions_with_evidence(tmp_path: Path) -> None:
    path = tmp_path / "sample.json"
    path.write_text(json.dumps([SAMPLE]))
    [conv] = load(path)
    assert conv.sample_id == "conv-x"
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[0].text == "Ana: I adopted a cat."
    assert conv.turns[1].text == "Ben: Look at this. [image: a photo of a bridge]"
    assert conv.turns[2].said_at == "2023-06-03T09:05:00Z"
    assert [(q.category, q.gold) for q in conv.questions] == [(4, frozenset({"D1:1"})), (1, frozenset({"D1:2", "D2:1"}))]
    assert conv.questions[1].gold_sessions == frozenset({"S1", "S2"})
    assert conv.skipped_questions == 1
    assert session_messages(conv.sessions[0])[1] == {
        "role": "user", "content": "Ben: Look at this. [image: a photo of a bridge]", "uuid": "D1:2", "timestamp": "2023-05-08T13:56:00Z",
    }


def test_a_file_that_is_not_locomo_raises_dataset_error(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps([{"sample_id": "x"}]))
    with pytest.raises(DatasetError, match="not a readable LoCoMo-format file"):
        load(path)


def test_contract_mode_metadata_names_neither_the_session_nor_its_date(tmp_path: Path) -> None:
    path = tmp_path / "sample.json"
    path.write_text(json.dumps([SAMPLE]))
    conversation = load(path)[0]
    turn = conversation.turns[0]
    assert turn_metadata(conversation, turn, extensions=False) == {"sample_id": "conv-x", "dia_id": "D1:1", "speaker": "Ana"}
    assert turn_metadata(conversation, turn) == {
        "sample_id": "conv-x", "dia_id": "D1:1", "session": 1, "session_date": "1:56 pm on 8 May, 2023", "speaker": "Ana",
    }
