/* TEMPORARY: replaced by the store work. */
