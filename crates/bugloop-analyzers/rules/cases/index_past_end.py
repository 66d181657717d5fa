# Cases of BLP001 (index-past-end): a line ending in `# BLP001` must be reported, no other. A
# loop's read is reported at its range, where the fix goes.


def loop_to_len_plus_one(xs):
    total = 0
    for i in range(len(xs) + 1):  # BLP001
        total += xs[i]
    return total


def last_items(items, count):
    return [items[i] for i in range(len(items) - count, len(items) + 1)]  # BLP001


def read_at_len(xs):
    return xs[len(xs)]  # BLP001


def count_down_from_len(xs):
    for i in range(len(xs), -1, -1):  # BLP001
        print(xs[i])


def attribute_sequence(self):
    return {k: self.items[k] for k in range(1 + len(self.items))}  # BLP001


def two_reads_one_range(xs):
    for i in range(len(xs) + 1):  # BLP001
        print(xs[i])
        print(xs[i] * 2)


def set_and_generator(xs):
    a = {xs[j] for j in range(0, len(xs) + 2)}  # BLP001
    return a, sum(xs[j] for j in range(len(xs) + 1))  # BLP001


def nested(rows):
    for r in range(len(rows)):
        for c in range(len(rows[r]) + 1):  # BLP001
            print(rows[r][c])


def fine(xs):
    for i in range(len(xs)):
        print(xs[i])
    return [xs[i] for i in range(len(xs) - 1)]


def prefixes(s):
    return [s[:i] for i in range(len(s) + 1)]


def guarded(xs):
    for i in range(len(xs) + 1):
        if i < len(xs):
            print(xs[i])


def caught(xs):
    for i in range(len(xs) + 1):
        try:
            print(xs[i])
        except IndexError:
            pass


def leaves_early(xs, stop):
    for i in range(len(xs) + 1):
        if stop():
            break
        print(xs[i])


def conditional(xs):
    return [xs[i] if i < len(xs) else None for i in range(len(xs) + 1)]


def filtered(xs):
    return [xs[i] for i in range(len(xs) + 1) if i != len(xs)]


def another_sequence(xs, ys):
    for i in range(len(xs) + 1):
        print(ys[i])


def grows(xs):
    for i in range(len(xs) + 1):
        xs.append(0)
        print(xs[i])


def reassigned(xs):
    for i in range(len(xs) + 1):
        i = min(i, len(xs) - 1)
        print(xs[i])


def stored(d):
    d[len(d)] = "next"


def stepped(xs):
    for i in range(0, len(xs) + 1, 2):
        print(xs[i])


def shadowing_len(xs):
    for i in range(len(xs) - 1, -1, -1):
        print(xs[i])


def for_else(xs):
    for i in range(len(xs) + 1):  # BLP001
        print(xs[i])
    else:
        pass
