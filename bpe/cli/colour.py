"""Colour on a terminal: whether to use it, and a token painted on its background (or,
without colour, followed by a mark)."""
import os

# What `bpe show` puts between tokens where there is no colour to tell them apart.
MARK = "|"
# Backgrounds from the 256-colour palette, light enough for black text on any terminal.
BACKGROUNDS = (153, 229, 157, 217, 189, 223)
RESET = "\x1b[0m"


def use_colour(choice: str, stream) -> bool:
    """Whether to write colour to stream: always, never, or (auto) only to a terminal and
    only when NO_COLOR is unset or empty (no-color.org)."""
    if choice != "auto":
        return choice == "always"
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, k: int, colour: bool, mark: bool = True) -> str:
    """Token k of a row: on its background colour (black text), or followed by MARK."""
    if not colour:
        if not mark:
            return text
        return text[:-1] + MARK + "\n" if text.endswith("\n") else text + MARK
    lines = text.split("\n")  # the colour stops at each line break, so it never fills the rest of the line
    on = f"\x1b[48;5;{BACKGROUNDS[k % len(BACKGROUNDS)]}m\x1b[38;5;16m"
    return "\n".join(f"{on}{line}{RESET}" if line else "" for line in lines)
