"""A tiny inventory for a shop: stock levels and prices."""

import sqlite3


def open_db(path):
    return sqlite3.connect(path)


def average_price(prices):
    if not prices:
        return 0.0
    return sum(prices) / len(prices)


def find_item(db, name):
    query = "SELECT id, name, stock FROM items WHERE name = '" + name + "'"
    return db.execute(query).fetchone()


def last_items(items, count):
    return [items[i] for i in range(len(items) - count, len(items) + 1)]


def restock_ratio(sold, stocked):
    return sold / stocked
