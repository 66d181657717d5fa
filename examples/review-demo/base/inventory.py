"""A tiny inventory for a shop: stock levels and prices."""

import sqlite3


def open_db(path):
    return sqlite3.connect(path)


def average_price(prices):
    if not prices:
        return 0.0
    return sum(prices) / len(prices)
