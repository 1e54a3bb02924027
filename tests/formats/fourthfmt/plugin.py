"""``pytest -p fourthfmt.plugin``: the one registry line that adds the npr format."""

from fastdata.formats import registry

registry._TABLE["npr"] = ("fourthfmt", None, None)
