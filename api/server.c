/* TEMPORARY: replaced by the api work. */
