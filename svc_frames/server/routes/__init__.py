"""The service's routes, one ``APIRouter`` per resource (in the order they are mounted):

* ``schema``   GET the application document;
* ``session``  remote login;
* ``assets``   upload, download;
* ``objects``  records with the API key;
* ``views``    records through scenes and views (lists, forms, inline edits).

Shared: ``auth`` (keys, tokens, lookups), ``http`` (bodies, paging, answers),
``openapi`` (documented parameters and bodies). Section numbers in the routes' docstrings,
such as (4.1), are those of docs/service-interface.md; docs/hosted-behaviour.md tells what
the hosted service does beyond it.

Usage::

    for router in ROUTERS:
        api.include_router(router)
"""

from fastapi import APIRouter

from . import assets, objects, schema, session, views

ROUTERS: list[APIRouter] = [schema.router, session.router, assets.router, objects.router,
                            views.router]

__all__ = ["ROUTERS"]
