"""Test helpers shared by the server's test modules (``from support.scripted_openai import ScriptedOpenAI``)."""
