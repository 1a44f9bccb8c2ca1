"""TRL's SFTTrainer on a p3data export in TRL's standard shapes (`p3data export --shape
prompt-completion` or `--shape messages`): every task's train split as one dataset, a tiny
decoder-only model (Llama's architecture, 2 layers) and a byte-level BPE tokenizer trained here
on the export's own text, so nothing comes from the Hub. Prints the loss of the first and last
steps.

    pip install trl
    python examples/trl_sft.py EXPORT_DIR [--steps 30]
"""

from __future__ import annotations

import argparse
import tempfile

import datasets
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, PrinterCallback
from trl import SFTConfig, SFTTrainer

SPECIAL = ["<pad>", "</s>", "<|user|>", "<|assistant|>"]
# For `messages` rows: each turn after its role's marker, the assistant's ended by EOS.
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
                 "{% if m['role'] == 'assistant' %}{{ eos_token }}{% endif %}{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def texts(row: dict) -> list[str]:
    if "messages" in row:
        return [turn["content"] for turn in row["messages"]]
    return [row["prompt"], row["completion"]]


def train_tokenizer(rows: datasets.Dataset, size: int = 2000) -> PreTrainedTokenizerFast:
    """A byte-level BPE of `size` pieces learnt from the rows' text."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator((text for row in rows for text in texts(row)), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>",
                                   eos_token="</s>", chat_template=CHAT_TEMPLATE)


def tiny_model(tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None, tie_word_embeddings=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export", help="a p3data export in a TRL shape")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    rows = datasets.load_dataset(args.export, "all_tasks", split="train")
    tokenizer = train_tokenizer(rows)
    with tempfile.TemporaryDirectory() as output:
        config = SFTConfig(output_dir=output, max_steps=args.steps, per_device_train_batch_size=8,
                           learning_rate=3e-3, lr_scheduler_type="constant", max_length=256,
                           logging_steps=1, save_strategy="no", report_to="none", use_cpu=True,
                           seed=0, disable_tqdm=True)
        trainer = SFTTrainer(model=tiny_model(tokenizer), args=config, train_dataset=rows,
                             processing_class=tokenizer)
        trainer.remove_callback(PrinterCallback)  # a line of figures a step
        trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    shape = "messages" if "messages" in rows.column_names else "prompt-completion"
    first, last = losses[:5], losses[-5:]
    print(f"{shape}: {len(rows)} rows, {len(losses)} steps of 8")
    print(f"loss {losses[0]:.2f} -> {losses[-1]:.2f}, mean of the first {len(first)} "
          f"{sum(first) / len(first):.2f}, of the last {len(last)} {sum(last) / len(last):.2f}")


if __name__ == "__main__":
    main()
