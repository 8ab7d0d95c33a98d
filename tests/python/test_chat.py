"""Chat templates (Jinja2, rendered as Hugging Face's apply_chat_template does)
and chatting with a model: Python's llm.chat and the `lumen chat` command."""
import os
import subprocess

import pytest

import lumen

transformers = pytest.importorskip("transformers")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "tools", "lumen")

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

# Llama-3 style: bos_token, loop controls, a system message taken out of the list, raise_exception.
LLAMA3 = """{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "You are helpful." %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" + system_message + "<|eot_id|>" }}
{%- for message in messages %}
    {%- if message['role'] not in ['user', 'assistant'] %}
        {{- raise_exception('roles must be user or assistant, got ' + message['role']) }}
    {%- endif %}
    {%- if loop.index0 > 8 %}{% break %}{% endif %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}
"""

MESSAGES = [{"role": "system", "content": "Be brief. "}, {"role": "user", "content": "Hi \u00e9\u6f22 \U0001f600"},
            {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "What is 2+2?"}]


def hf_render(template, messages, add_generation_prompt, bos="<s>", eos="</s>"):
    """transformers' own renderer (the reference)."""
    from transformers.utils.chat_template_utils import render_jinja_template
    rendered, _ = render_jinja_template(conversations=[messages], chat_template=template,
                                        add_generation_prompt=add_generation_prompt, bos_token=bos, eos_token=eos)
    return rendered[0]


@pytest.mark.parametrize("template", [CHATML, LLAMA3], ids=["chatml", "llama3"])
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_templates_render_as_transformers_does(template, add_generation_prompt):
    t = lumen.io.ChatTemplate(template, "<s>", "</s>")
    assert t.render(MESSAGES, add_generation_prompt) == hf_render(template, MESSAGES, add_generation_prompt)


def test_chatml_text_exactly():
    t = lumen.io.ChatTemplate(CHATML)
    assert t.render([{"role": "user", "content": "Hi"}]) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_template_errors_are_lumen_errors():
    with pytest.raises(lumen.Error, match="does not parse"):
        lumen.io.ChatTemplate("{% for m in messages %}{{ m['content'] }")
    t = lumen.io.ChatTemplate(LLAMA3)
    with pytest.raises(lumen.Error, match="roles must be user or assistant, got tool"):
        t.render([{"role": "tool", "content": "x"}])
    with pytest.raises(lumen.Error, match="role"):
        t.render([{"content": "no role"}])


VOCAB = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "\u2581", "\n"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    from lumen.gguf_export import export_llama
    from test_llama import make_model
    tmp = tmp_path_factory.mktemp("chat")
    vocab = VOCAB + [f"<t{i}>" for i in range(96 - len(VOCAB))]
    types = [2, 3, 3, 3, 3] + [1] * (len(vocab) - 5)  # unknown, then control tokens (parsed in text), then normal
    _, path = make_model(tmp, bos_token_id=1, eos_token_id=2)
    return export_llama(path, tmp / "chat.gguf", "f32", vocab=vocab, chat_template=CHATML, token_types=types)


def test_llm_chat_is_a_fresh_sequence_each_call(chat_model):
    llm = lumen.models.Llama(str(chat_model), capacity=128)
    messages = [{"role": "user", "content": "hi there"}]
    first, stats = llm.chat(messages, max_new_tokens=6)
    again, _ = llm.chat(messages, max_new_tokens=6)
    assert first == again, "the second call must not continue the first conversation"
    assert stats["stop_reason"] in ("end_of_turn", "length")
    assert 1 <= stats["generated_tokens"] <= 6 and stats["prompt_tokens"] > 4
    session = lumen.models.ChatSession(llm, str(chat_model))
    assert 4 in session.end_of_turn and 2 in session.end_of_turn  # <|im_end|> by its text, </s> as eos
    text, _ = session.reply("hi there", max_new_tokens=6)
    assert text == first
    assert session.prompt.startswith("<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n" + text)


def test_cli_chat_one_message(chat_model):
    r = subprocess.run([CLI, "chat", "-m", str(chat_model), "-p", "hi", "-n", "5", "--no-tuning-cache"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "prefill" in r.stderr and "tokens/s" in r.stderr
    assert r.stdout.endswith("\n")


def test_cli_chat_interactive_reset_and_end_of_input(chat_model):
    r = subprocess.run([CLI, "chat", "-m", str(chat_model), "-n", "3", "--no-tuning-cache"], input="hi\n/reset\nyo\n",
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("reply ") == 2  # two turns answered, the /reset in between
    assert "conversation forgotten" in r.stderr


def test_cli_chat_refuses_a_model_without_template(tmp_path):
    from lumen.gguf_export import export_llama
    from test_llama import make_model
    _, path = make_model(tmp_path)
    f = export_llama(path, tmp_path / "plain.gguf", "f32")
    r = subprocess.run([CLI, "chat", "-m", str(f), "-p", "hi"], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "no chat template" in r.stderr
