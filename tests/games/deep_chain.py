"""A deep, narrow two-player ``.efg`` game for the tests of builds on slow inputs."""


def deep_chain(depth: int) -> str:
    """The text of an ``.efg`` file alternating the two players down one path: at each level the
    player to move stops or goes on, so every pair of infosets on the path is connected (about
    ``depth²`` relevant pairs from ``2·depth + 1`` nodes)."""
    lines = ['EFG 2 R "chain" { "P1" "P2" }', '""']
    for d in range(depth):
        lines.append(f'p "" {d % 2 + 1} {d // 2 + 1} "" {{ "s" "g" }} 0')
        lines.append(f't "" {d + 1} "" {{ {d} {-d} }}')
    lines.append(f't "" {depth + 1} "" {{ 0 0 }}')
    return "\n".join(lines) + "\n"
