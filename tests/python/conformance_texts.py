"""The texts every conformance check scores: 20 teacher-forced essays of
>= 64 tokens and 5 chat prompts for greedy continuations (test_conformance.py
against llama.cpp, test_torch_backend.py between backends)."""

TOPICS = [
    "the history of the printing press", "how bees make honey", "the water cycle",
    "why the sky is blue", "the rules of chess", "how a compiler works", "the French Revolution",
    "photosynthesis in plants", "the life of a star", "how vaccines train the immune system",
    "the invention of the telephone", "plate tectonics", "the Roman aqueducts",
    "how the internet routes packets", "the migration of birds", "the structure of DNA",
    "coffee cultivation in Ethiopia", "the theory of evolution", "jazz music in New Orleans",
    "the first moon landing",
]


def make_text(i, topic):
    return (
        f"Chapter {i + 1}: {topic.capitalize()}.\n\n"
        f"People have long been curious about {topic}. In this short essay we look at where the idea "
        f"came from, what scientists and historians have learned about it, and why it still matters "
        f"today. First, we describe the basic facts in plain words. Then we look at three common "
        f"misunderstandings, and finally we explain what questions remain open for researchers. "
        f"By the end, the reader should be able to explain {topic} to a friend in a few sentences."
    )


CHAT_PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain in two sentences what a CPU does.",
    "Give me three tips for learning to cook.",
    "What is 12 times 7?",
]
