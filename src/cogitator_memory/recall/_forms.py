"""Word families the English stemmer does not join: irregular verbs and derivations.

The recall index stems words (``painted`` and ``painting`` -> ``paint``, see
:mod:`~cogitator_memory.index.terms`), but a stemmer cuts suffixes: it cannot join ``bought`` to
``buy``, ``chose`` to ``choice`` or ``decide`` to ``decision``. A question reads its words
through :func:`word_family`, which gives the other members of a word's family, so that a
question asking what was bought finds the turn saying "I'll buy it". Each line of the tables is
one family, its words separated by spaces (every form a search should find for any of them).
"""

from __future__ import annotations

from functools import lru_cache

# Irregular verbs: base, past, past participle (and other forms), one family a line.
_IRREGULAR = """
arise arose arisen
awake awoke awoken
bear bore born borne
beat beaten
become became
begin began begun
bend bent
bite bitten
bleed bled
blow blew blown
break broke broken
breed bred
bring brought
build built
burn burnt
buy bought
catch caught
choose chose chosen choice
come came
creep crept
deal dealt
dig dug
draw drew drawn
dream dreamt
drink drank drunk
drive drove driven
eat ate eaten
feed fed
feel felt
fight fought
find found
flee fled
fly flew flown flight
forbid forbade forbidden
forget forgot forgotten
forgive forgave forgiven
freeze froze frozen
give gave given
go went gone
grow grew grown growth
hear heard
hide hid hidden
hold held
hurt
keep kept
kneel knelt
know knew known
lay laid
lead led
lean leant
leap leapt
learn learnt
leave left
lend lent
lose lost loss
mean meant
meet met
pay paid payment
prove proven proof
ride rode ridden
ring rang rung
run ran
see seen
seek sought
sell sold sale
send sent
shake shook shaken
shine shone
shoot shot
show showed shown
shrink shrank shrunk
sing sang sung
sink sank sunk
sit sat
sleep slept
slide slid
speak spoke spoken speech
speed sped
spend spent
spin spun
stand stood
steal stole stolen
stick stuck
sting stung
stink stank stunk
strike struck
strive strove striven
swear swore sworn
sweep swept
swim swam swum
swing swung
take took taken
teach taught
tear tore torn
think thought
throw threw thrown
tread trod trodden
understand understood
wake woke woken
wear wore worn
weave wove woven
weep wept
win won
withdraw withdrew withdrawn
write wrote written
"""

# Derivations the stemmer leaves apart (the suffix changes the word's stem), and plurals it
# does not join.
_DERIVED = """
able ability
absorb absorption
admit admission
apply application
arrive arrival
believe belief
choose choice
clear clarity
collide collision
conclude conclusion
consume consumption
deceive deception
decide decision
deep depth
defend defense defence
describe description
die death dead
divide division
explode explosion
extend extension
fail failure
high height
include inclusion
intend intention
introduce introduction
long length
marry marriage
omit omission
permit permission
persuade persuasion
produce production product
provide provision
receive receipt reception
reduce reduction
resolve resolution
respond response
revise revision
safe safety
solve solution
strong strength
submit submission
succeed success
suspend suspension
true truth
wide width
young youth
child children
man men
woman women
person people
mouse mice
foot feet
tooth teeth
"""


def _families(*tables: str) -> dict[str, tuple[str, ...]]:
    out: dict[str, set[str]] = {}
    for table in tables:
        for line in table.strip().splitlines():
            words = line.split()
            for word in words:
                out.setdefault(word, set()).update(words)
    return {word: tuple(sorted(family - {word})) for word, family in out.items()}


#: Each word of the tables -> the other words of its families (irregular verbs and derivations).
FAMILIES: dict[str, tuple[str, ...]] = _families(_IRREGULAR, _DERIVED)


@lru_cache(maxsize=50_000)
def word_family(word: str) -> tuple[str, ...]:
    """The other forms of ``word`` (case-folded) a search should find: ``bought`` -> ``buy``,
    ``decide`` -> ``decision``; ``()`` for a word the tables do not hold. Regular forms are the
    stemmer's (``buying`` is ``buy`` already)."""
    return FAMILIES.get(word, ())


__all__ = ["FAMILIES", "word_family"]
